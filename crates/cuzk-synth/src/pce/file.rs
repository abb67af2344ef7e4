//! The PCE file format: a versioned, checksummed little-endian dump of the three matrices.
//!
//! Layout (all integers little-endian):
//!
//! | bytes          | content                                                        |
//! |----------------|----------------------------------------------------------------|
//! | 8              | magic `CUZKPCE\0`                                              |
//! | 4              | format version (`u32`)                                         |
//! | 4              | circuit key length in bytes (`u32`, at most [`MAX_KEY_LEN`])   |
//! | 3 × 8          | `num_inputs`, `num_aux`, `num_constraints` (`u64`)             |
//! | 3 × 8          | entries of A, B, C (`u64`)                                     |
//! | 3 × 8          | coefficient table lengths of A, B, C (`u64`, each at most entries + 2) |
//! | 4              | CRC32 of the 88 bytes above                                    |
//! | key length     | circuit key, UTF-8                                             |
//! | 4              | CRC32 of everything above                                      |
//! | per A, B, C    | row pointers (`rows + 1` × `u64`), columns (`u32`), coefficient indices (`u32`), coefficient table (4 × `u64` Montgomery limbs each) |
//! | 4              | CRC32 of everything above                                      |
//!
//! An entry's coefficient is an index into its matrix's table of distinct values (see
//! [`Csr`]). Every size, the tables' included, is in the fixed header, which has its own
//! checksum so that sizes are trusted before anything is allocated from them; the body is
//! validated only after the final checksum matched, so a damaged byte reports as a checksum
//! mismatch rather than as whatever it broke. The version is read before the rest of the
//! header, so a file of another version, however short, reports as such.
//!
//! Version 1 stored each entry's coefficient as a scalar; it is not read (callers record
//! the circuit again on any load error).

use super::crc_io::{u32_at, u64_at, CrcRead, CrcWrite};
use super::{Csr, Pce};
use crate::SynthError;
use cuzk_field::{FrRepr, Scalar};
use ff::Field;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// First eight bytes of every PCE file.
pub const PCE_MAGIC: [u8; 8] = *b"CUZKPCE\0";
/// The format version this build reads and writes.
pub const PCE_FORMAT_VERSION: u32 = 2;
/// Longest circuit key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

const FIXED_HEADER_LEN: usize = 88;
const FR_BYTES: usize = 32;
const IO_BUF: usize = 1 << 20;

const SECTIONS: [[&str; 4]; 3] = [
    [
        "A row pointers",
        "A columns",
        "A coefficient indices",
        "A coefficient table",
    ],
    [
        "B row pointers",
        "B columns",
        "B coefficient indices",
        "B coefficient table",
    ],
    [
        "C row pointers",
        "C columns",
        "C coefficient indices",
        "C coefficient table",
    ],
];

fn encode_scalar(s: &Scalar, out: &mut [u8]) {
    let repr = FrRepr::from(*s);
    for (limb, bytes) in repr.limbs.iter().zip(out.chunks_exact_mut(8)) {
        bytes.copy_from_slice(&limb.to_le_bytes());
    }
}

/// Replaces a stream error by the same error on the named file.
fn on_path(path: &Path) -> impl Fn(SynthError) -> SynthError + '_ {
    move |e| match e {
        SynthError::StreamIo { source } => SynthError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => other,
    }
}

/// Total size in bytes of a file with this header.
fn file_len(h: &Header) -> Option<u64> {
    let mut total = (FIXED_HEADER_LEN + 4 + h.key_len + 4 + 4) as u64;
    for (n, t) in h.nnz.into_iter().zip(h.tables) {
        let matrix = (h.rows() as u64 + 1)
            .checked_mul(8)?
            .checked_add((n as u64).checked_mul(4 + 4)?)?
            .checked_add((t as u64).checked_mul(FR_BYTES as u64)?)?;
        total = total.checked_add(matrix)?;
    }
    Some(total)
}

impl Pce {
    /// Writes this PCE to `path` under the circuit key `key` (e.g. `sha256-preimage-64B`).
    ///
    /// The data goes to `<path>.partial` first and is renamed into place once complete, so
    /// a reader never sees a half-written file under the final name.
    pub fn save(&self, path: impl AsRef<Path>, key: &str) -> Result<(), SynthError> {
        let path = path.as_ref();
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let result = (|| {
            let file = File::create(&partial).map_err(|source| SynthError::Io {
                path: partial.clone(),
                source,
            })?;
            let mut w = BufWriter::with_capacity(IO_BUF, file);
            self.write_to(&mut w, key).map_err(on_path(&partial))?;
            w.flush().map_err(|source| SynthError::Io {
                path: partial.clone(),
                source,
            })?;
            drop(w);
            std::fs::rename(&partial, path).map_err(|source| SynthError::Io {
                path: path.to_path_buf(),
                source,
            })
        })();
        if result.is_err() {
            // Best effort: the error being returned matters more than a leftover file.
            let _ = std::fs::remove_file(&partial);
        }
        result
    }

    /// Writes this PCE to a stream (buffer it: many small writes are made).
    pub fn write_to<W: Write>(&self, w: W, key: &str) -> Result<(), SynthError> {
        if key.len() > MAX_KEY_LEN {
            return Err(SynthError::KeyTooLong {
                len: key.len(),
                max: MAX_KEY_LEN,
            });
        }
        // Only what the layout itself depends on is checked here; `load` validates the rest.
        let rows = self.num_rows();
        let matrices = [&self.a, &self.b, &self.c];
        for (name, m) in ["A", "B", "C"].into_iter().zip(matrices) {
            if m.row_ptr.len() != rows + 1 || m.cols.len() != m.coeffs.len() {
                return Err(SynthError::Corrupt {
                    what: format!(
                        "matrix {name}: {} row pointers for {rows} rows, {} columns, {} \
                         coefficient indices",
                        m.row_ptr.len(),
                        m.cols.len(),
                        m.coeffs.len()
                    ),
                });
            }
        }
        // A table longer than the entries allow (values left unused by edits or merged
        // rows) is written without its unused values, as a reader only accepts tables of
        // at most entries + 2 values.
        let compacted = matrices.map(|m| {
            (m.table.len() > m.nnz() + 2)
                .then(|| m.compacted_table())
                .flatten()
        });
        let tables: [&[Scalar]; 3] = std::array::from_fn(|i| {
            compacted[i]
                .as_ref()
                .map_or(&matrices[i].table[..], |(_, t)| &t[..])
        });
        let mut w = CrcWrite::new(w);
        let mut header = Vec::with_capacity(FIXED_HEADER_LEN);
        header.extend_from_slice(&PCE_MAGIC);
        header.extend_from_slice(&PCE_FORMAT_VERSION.to_le_bytes());
        header.extend_from_slice(&(key.len() as u32).to_le_bytes());
        for n in [
            self.num_inputs,
            self.num_aux,
            self.num_constraints,
            self.a.nnz(),
            self.b.nnz(),
            self.c.nnz(),
            tables[0].len(),
            tables[1].len(),
            tables[2].len(),
        ] {
            header.extend_from_slice(&(n as u64).to_le_bytes());
        }
        w.put(&header)?;
        w.put_crc()?;
        w.put(key.as_bytes())?;
        w.put_crc()?;
        for ((m, compacted), table) in matrices.into_iter().zip(&compacted).zip(tables) {
            w.put_array(&m.row_ptr, 8, |p, out| {
                out.copy_from_slice(&p.to_le_bytes())
            })?;
            w.put_array(&m.cols, 4, |c, out| out.copy_from_slice(&c.to_le_bytes()))?;
            match compacted {
                None => {
                    w.put_array(&m.coeffs, 4, |k, out| out.copy_from_slice(&k.to_le_bytes()))?
                }
                Some((remap, _)) => w.put_array(&m.coeffs, 4, |&k, out| {
                    let k = remap.get(k as usize).copied().unwrap_or(u32::MAX);
                    out.copy_from_slice(&k.to_le_bytes())
                })?,
            }
            w.put_array(table, FR_BYTES, encode_scalar)?;
        }
        w.put_crc()
    }

    /// Reads a PCE from `path`; with `expected_key`, errors with
    /// [`SynthError::CircuitMismatch`] if the file was recorded for another circuit.
    pub fn load(path: impl AsRef<Path>, expected_key: Option<&str>) -> Result<Pce, SynthError> {
        let path = path.as_ref();
        let io = |source| SynthError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let r = BufReader::with_capacity(IO_BUF, file);
        read(r, expected_key, Some(len)).map_err(on_path(path))
    }

    /// Reads only the header of the PCE file at `path` (checked as [`Pce::load`] checks it,
    /// `expected_key` included), to size what loading the file will hold before loading it.
    pub fn peek(
        path: impl AsRef<Path>,
        expected_key: Option<&str>,
    ) -> Result<PceHeader, SynthError> {
        let path = path.as_ref();
        let io = |source| SynthError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        let file_bytes = file.metadata().map_err(io)?.len();
        let mut r = CrcRead::new(BufReader::new(file));
        let h = read_header(&mut r, expected_key).map_err(on_path(path))?;
        Ok(PceHeader {
            num_inputs: h.num_inputs,
            num_aux: h.num_aux,
            num_constraints: h.num_constraints,
            nnz: h.nnz,
            file_bytes,
        })
    }

    /// Reads a PCE from a stream (buffer it: many small reads are made); see [`Pce::load`].
    pub fn read_from<R: Read>(r: R, expected_key: Option<&str>) -> Result<Pce, SynthError> {
        read(r, expected_key, None)
    }
}

/// What a PCE file's header says ([`Pce::peek`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PceHeader {
    /// Public inputs, ONE included.
    pub num_inputs: usize,
    /// Aux variables.
    pub num_aux: usize,
    /// Constraints.
    pub num_constraints: usize,
    /// Entries of A, B and C.
    pub nnz: [usize; 3],
    /// The file's length: what the loaded PCE holds in memory, within its few header bytes.
    pub file_bytes: u64,
}

/// The shape a file's header announces.
struct Header {
    key_len: usize,
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    nnz: [usize; 3],
    /// Coefficient table lengths.
    tables: [usize; 3],
}

impl Header {
    fn rows(&self) -> usize {
        self.num_constraints + self.num_inputs
    }
}

/// Parses a PCE; `total_len`, where known, is the exact size of the data.
fn read<R: Read>(
    r: R,
    expected_key: Option<&str>,
    total_len: Option<u64>,
) -> Result<Pce, SynthError> {
    let mut r = CrcRead::new(r);
    let h = read_header(&mut r, expected_key)?;
    let expected_len = file_len(&h);
    // Sizes are only allocated up front when the data is known to be that long.
    let reserve = matches!((total_len, expected_len), (Some(t), Some(e)) if t >= e);

    // Damaged values are noted and replaced, so that the checksum gets the first word.
    let mut first_bad: Option<String> = None;
    let mut matrices = Vec::with_capacity(3);
    for (m, sections) in SECTIONS.iter().enumerate() {
        let row_ptr = r.take_array(h.rows() + 1, 8, sections[0], reserve, |b| u64_at(b, 0))?;
        let cols = r.take_array(h.nnz[m], 4, sections[1], reserve, |b| u32_at(b, 0))?;
        let coeffs = r.take_array(h.nnz[m], 4, sections[2], reserve, |b| u32_at(b, 0))?;
        let mut k = 0usize;
        let table = r.take_array(h.tables[m], FR_BYTES, sections[3], reserve, |b| {
            let limbs = [u64_at(b, 0), u64_at(b, 8), u64_at(b, 16), u64_at(b, 24)];
            k += 1;
            Scalar::try_from(FrRepr { limbs }).unwrap_or_else(|e| {
                first_bad.get_or_insert_with(|| format!("{} entry {}: {e}", sections[3], k - 1));
                Scalar::ZERO
            })
        })?;
        matrices.push(Csr::from_parts(row_ptr, cols, coeffs, table));
    }
    r.expect_crc("file")?;

    if let (Some(total), Some(expected)) = (total_len, expected_len) {
        if total > expected {
            return Err(SynthError::Corrupt {
                what: format!("{} trailing bytes after the checksum", total - expected),
            });
        }
    }
    if let Some(what) = first_bad {
        return Err(SynthError::Corrupt { what });
    }
    let [a, b, c]: [Csr; 3] = matrices.try_into().expect("three matrices");
    let pce = Pce {
        num_inputs: h.num_inputs,
        num_aux: h.num_aux,
        num_constraints: h.num_constraints,
        a,
        b,
        c,
    };
    pce.validate()?;
    Ok(pce)
}

/// Reads and checks everything before the matrices: magic, version, counts, circuit key.
fn read_header<R: Read>(
    r: &mut CrcRead<R>,
    expected_key: Option<&str>,
) -> Result<Header, SynthError> {
    let mut h = [0u8; FIXED_HEADER_LEN];
    r.take(&mut h[..8], "magic")?;
    if h[..8] != PCE_MAGIC {
        return Err(SynthError::BadMagic {
            found: h[..8].try_into().expect("8 bytes"),
        });
    }
    r.take(&mut h[8..12], "header")?;
    let version = u32_at(&h, 8);
    if version != PCE_FORMAT_VERSION {
        return Err(SynthError::UnsupportedVersion {
            found: version,
            supported: PCE_FORMAT_VERSION,
        });
    }
    r.take(&mut h[12..], "header")?;
    r.expect_crc("header")?;

    let too_big = |what: &str, n: u64| SynthError::Corrupt {
        what: format!("{what} {n} does not fit this platform"),
    };
    let count = |at: usize, what: &str| {
        usize::try_from(u64_at(&h, at)).map_err(|_| too_big(what, u64_at(&h, at)))
    };
    let header = Header {
        key_len: u32_at(&h, 12) as usize,
        num_inputs: count(16, "input count")?,
        num_aux: count(24, "aux count")?,
        num_constraints: count(32, "constraint count")?,
        nnz: [
            count(40, "A entry count")?,
            count(48, "B entry count")?,
            count(56, "C entry count")?,
        ],
        tables: [
            count(64, "A coefficient table length")?,
            count(72, "B coefficient table length")?,
            count(80, "C coefficient table length")?,
        ],
    };
    for (name, (n, t)) in ["A", "B", "C"]
        .into_iter()
        .zip(header.nnz.into_iter().zip(header.tables))
    {
        // Each value but ONE and -ONE is some entry's: a longer table is not allocated.
        if t > n.saturating_add(2) {
            return Err(SynthError::Corrupt {
                what: format!("matrix {name}: coefficient table of {t} values for {n} entries"),
            });
        }
    }
    if header
        .num_constraints
        .checked_add(header.num_inputs)
        .is_none_or(|rows| rows == usize::MAX)
    {
        return Err(too_big("constraint count", header.num_constraints as u64));
    }
    if header.key_len > MAX_KEY_LEN {
        return Err(SynthError::Corrupt {
            what: format!(
                "circuit key length {} exceeds {MAX_KEY_LEN}",
                header.key_len
            ),
        });
    }
    let mut key = vec![0u8; header.key_len];
    r.take(&mut key, "circuit key")?;
    r.expect_crc("header")?;
    let key = String::from_utf8(key).map_err(|e| SynthError::Corrupt {
        what: format!("circuit key is not UTF-8: {e}"),
    })?;
    match expected_key {
        Some(expected) if expected != key => Err(SynthError::CircuitMismatch {
            expected: expected.to_owned(),
            found: key,
        }),
        _ => Ok(header),
    }
}
