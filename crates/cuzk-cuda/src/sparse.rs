//! Sparse work over Fr on the device (`kernels/eval/eval.cu`): a circuit's constraint
//! matrices in CSR form with coefficient tables ([`DeviceCsr`]) multiplied by a witness, with
//! the satisfiability check in the same pass ([`eval_abc`]), and the elements a bitmap
//! selects gathered in order ([`DeviceBitmap`], [`gather`]).
//!
//! The kernels read where the indices point, so the uploads check every index first: a
//! [`DeviceCsr`] or [`DeviceBitmap`] that exists is safe to launch with.
#![allow(unsafe_code)] // The launches of this module's kernels, each checked against its signature.

use crate::field::same_len as same;
use crate::{CudaError, DeviceBuffer, DeviceView, DeviceViewMut, LaunchConfig, Result, Stream};
use cuzk_field::FrRepr;

/// Threads per block of both kernels (their `__launch_bounds__`).
const BLOCK: u32 = 256;

/// The value `first_failing` holds when every row is satisfied.
pub const ALL_SATISFIED: u32 = u32::MAX;

/// One constraint matrix on the device: row pointers, a column and a coefficient-table index
/// per entry, and the table (ONE and −ONE first, as `cuzk_synth::Csr` keeps it).
#[derive(Debug)]
pub struct DeviceCsr {
    row_ptr: DeviceBuffer<u32>,
    cols: DeviceBuffer<u32>,
    coeffs: DeviceBuffer<u32>,
    table: DeviceBuffer<FrRepr>,
    num_cols: usize,
}

impl DeviceCsr {
    /// Uploads a matrix of `row_ptr.len() − 1` rows over `num_cols` columns, after checking
    /// that every row pointer is at most the entry count, every column is below `num_cols`
    /// and every coefficient index is inside `table`, which must hold at least ONE and −ONE.
    pub fn upload(
        stream: &Stream,
        row_ptr: &[u32],
        cols: &[u32],
        coeffs: &[u32],
        table: &[FrRepr],
        num_cols: usize,
    ) -> Result<DeviceCsr> {
        if row_ptr.is_empty() {
            return Err(CudaError::LengthMismatch {
                what: "row pointers (rows + 1)",
                expected: 1,
                got: 0,
            });
        }
        if cols.len() != coeffs.len() {
            return Err(CudaError::LengthMismatch {
                what: "coefficient indices (one per entry)",
                expected: cols.len(),
                got: coeffs.len(),
            });
        }
        if table.len() < 2 {
            return Err(CudaError::LengthMismatch {
                what: "coefficient table (ONE and −ONE at least)",
                expected: 2,
                got: table.len(),
            });
        }
        check_below("row pointer", row_ptr, cols.len() as u64 + 1)?;
        check_below("column of entry", cols, num_cols as u64)?;
        check_below("coefficient index of entry", coeffs, table.len() as u64)?;
        Ok(DeviceCsr {
            row_ptr: stream.upload(row_ptr)?,
            cols: stream.upload(&nonempty(cols))?,
            coeffs: stream.upload(&nonempty(coeffs))?,
            table: stream.upload(table)?,
            num_cols,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// Number of columns (the witness length it multiplies).
    pub fn num_cols(&self) -> usize {
        self.num_cols
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        (self.row_ptr.size_bytes()
            + self.cols.size_bytes()
            + self.coeffs.size_bytes()
            + self.table.size_bytes()) as u64
    }

    /// Device bytes a matrix of `rows` rows, `entries` entries and `table` coefficients takes.
    pub fn bytes_for(rows: usize, entries: usize, table: usize) -> u64 {
        let u32s = rows + 1 + 2 * entries.max(1);
        (u32s * 4 + table * std::mem::size_of::<FrRepr>()) as u64
    }
}

/// A bitmap on the device with the count of set bits before each 64-bit word, for
/// [`gather`].
#[derive(Debug)]
pub struct DeviceBitmap {
    words: DeviceBuffer<u64>,
    offsets: DeviceBuffer<u32>,
    len: usize,
    ones: usize,
}

impl DeviceBitmap {
    /// Uploads a bitmap of `len` bits held in `words` (bit `i` is bit `i % 64` of word
    /// `i / 64`; bits from `len` on must be clear).
    pub fn upload(stream: &Stream, words: &[u64], len: usize) -> Result<DeviceBitmap> {
        let expected = len.div_ceil(64);
        if words.len() != expected {
            return Err(CudaError::LengthMismatch {
                what: "bitmap words",
                expected,
                got: words.len(),
            });
        }
        if !len.is_multiple_of(64) {
            let last = words[expected - 1];
            if last >> (len % 64) != 0 {
                return Err(CudaError::IndexOutOfRange {
                    what: "set bit of the bitmap",
                    index: expected - 1,
                    value: (expected as u64 - 1) * 64 + u64::from(63 - last.leading_zeros()),
                    bound: len as u64,
                });
            }
        }
        let mut offsets = Vec::with_capacity(words.len().max(1));
        let mut ones = 0u64;
        for w in words {
            offsets.push(u32::try_from(ones).map_err(|_| CudaError::IndexOutOfRange {
                what: "set bits of the bitmap",
                index: offsets.len(),
                value: ones,
                bound: u64::from(u32::MAX) + 1,
            })?);
            ones += u64::from(w.count_ones());
        }
        Ok(DeviceBitmap {
            words: stream.upload(&nonempty(words))?,
            offsets: stream.upload(&nonempty(&offsets))?,
            len,
            ones: ones as usize,
        })
    }

    /// Bits in the map.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map has no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set bits: the length of what [`gather`] writes.
    pub fn ones(&self) -> usize {
        self.ones
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        (self.words.size_bytes() + self.offsets.size_bytes()) as u64
    }

    /// Device bytes a bitmap of `len` bits takes.
    pub fn bytes_for(len: usize) -> u64 {
        (len.div_ceil(64).max(1) * 12) as u64
    }
}

/// Queues `a = A·w`, `b = B·w`, `c = C·w` for the witness `w = inputs ‖ aux` into buffers of
/// the domain's length (at least the rows; the rest is zeroed), and lowers `first_failing[0]`
/// to the index of every row where `a·b ≠ c`. Set `first_failing[0]` to [`ALL_SATISFIED`]
/// before; after the stream has passed the launch it holds the first failing row, or
/// [`ALL_SATISFIED`].
pub fn eval_abc(
    stream: &Stream,
    matrices: [&DeviceCsr; 3],
    inputs: &DeviceView<'_, FrRepr>,
    aux: &DeviceView<'_, FrRepr>,
    out: [&mut DeviceBuffer<FrRepr>; 3],
    first_failing: &mut DeviceBuffer<u32>,
) -> Result<()> {
    let [ma, mb, mc] = matrices;
    let rows = ma.rows();
    let cols = inputs.len() + aux.len();
    for m in [mb, mc] {
        same("rows of B and C (those of A)", rows, m.rows())?;
    }
    for m in matrices {
        same("witness length (the matrices' columns)", m.num_cols, cols)?;
    }
    let num_inputs = u32::try_from(inputs.len()).map_err(|_| CudaError::IndexOutOfRange {
        what: "input count",
        index: 0,
        value: inputs.len() as u64,
        bound: u64::from(u32::MAX) + 1,
    })?;
    let [a, b, c] = out;
    let n = a.len();
    if n < rows {
        return Err(CudaError::LengthMismatch {
            what: "evaluation buffer (at least the rows)",
            expected: rows,
            got: n,
        });
    }
    same("b's buffer (a's length)", n, b.len())?;
    same("c's buffer (a's length)", n, c.len())?;
    same("first-failing-row slot", 1, first_failing.len())?;
    if n == 0 {
        return Ok(());
    }
    let kernel = stream.device().kernel("cuzk_eval_abc")?;
    let (rows, n64) = (rows as u64, n as u64);
    let cfg = launch_config(stream, n);
    // SAFETY: cuzk_eval_abc is (fr_t* a, fr_t* b, fr_t* c, uint32_t* first_failing, then per
    // matrix A, B, C: const uint32_t* row_ptr, const uint32_t* cols, const uint32_t* coeffs,
    // const fr_t* table; then const fr_t* inputs, const fr_t* aux, uint32_t num_inputs,
    // uint64_t rows, uint64_t n), pushed in that order with those layouts (FrRepr is fr_t's
    // eight u32 limbs). Its grid-stride loop writes a, b, c below n (each holds n elements)
    // and first_failing[0] (one element); it reads row pointers 0..=rows of each matrix (each
    // has rows + 1), entries below the row pointers (checked at upload to be at most the entry
    // count), columns below inputs.len() + aux.len() (checked at upload against num_cols,
    // equal to that sum here) split at num_inputs, and table indices checked at upload. No
    // shared memory.
    unsafe {
        let mut l = stream.launch(&kernel);
        l.buf_mut(a).buf_mut(b).buf_mut(c).buf_mut(first_failing);
        for m in matrices {
            l.buf(&m.row_ptr).buf(&m.cols).buf(&m.coeffs).buf(&m.table);
        }
        l.view(inputs)
            .view(aux)
            .arg(&num_inputs)
            .arg(&rows)
            .arg(&n64)
            .launch(cfg)
    }
}

/// Queues writing the elements of `src` whose bit is set in `bits`, in order, into `out`
/// (exactly as many as the map has set bits).
pub fn gather(
    stream: &Stream,
    src: &DeviceView<'_, FrRepr>,
    bits: &DeviceBitmap,
    out: &mut DeviceViewMut<'_, FrRepr>,
) -> Result<()> {
    same("gather source (the bitmap's bits)", bits.len, src.len())?;
    same(
        "gather output (the bitmap's set bits)",
        bits.ones,
        out.len(),
    )?;
    if bits.ones == 0 {
        return Ok(());
    }
    let kernel = stream.device().kernel("cuzk_eval_gather")?;
    let len = bits.len as u64;
    let cfg = launch_config(stream, bits.len);
    // SAFETY: cuzk_eval_gather is (fr_t* out, const fr_t* src, const uint64_t* words, const
    // uint32_t* offsets, uint64_t len), pushed in that order. It reads src[0..len) (src has
    // len elements), words and offsets at i / 64 < len.div_ceil(64) (both have that many, as
    // uploaded), and writes out at offsets[i / 64] + set bits below i in its word, which is
    // below the map's set-bit count, out's length (the bits from len on are clear, checked at
    // upload). No shared memory.
    unsafe {
        stream
            .launch(&kernel)
            .view_mut(out)
            .view(src)
            .buf(&bits.words)
            .buf(&bits.offsets)
            .arg(&len)
            .launch(cfg)
    }
}

/// The launch shape of the sparse kernels (and the packed witness's): one element per
/// thread, grid-stride beyond 16 blocks per SM.
pub(crate) fn launch_config(stream: &Stream, n: usize) -> LaunchConfig {
    let max_grid = stream.device().info().sm_count.max(1) * 16;
    LaunchConfig::for_items(n, BLOCK, max_grid)
}

/// Every element below `bound`, else the first that is not.
fn check_below(what: &'static str, values: &[u32], bound: u64) -> Result<()> {
    match values.iter().position(|&v| u64::from(v) >= bound) {
        None => Ok(()),
        Some(index) => Err(CudaError::IndexOutOfRange {
            what,
            index,
            value: u64::from(values[index]),
            bound,
        }),
    }
}

/// The driver refuses empty allocations: an empty slice travels as one zero element, which
/// no kernel reads.
fn nonempty<T: bytemuck::Pod>(values: &[T]) -> std::borrow::Cow<'_, [T]> {
    if values.is_empty() {
        std::borrow::Cow::Owned(vec![T::zeroed()])
    } else {
        std::borrow::Cow::Borrowed(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_checks_name_the_first_offender() {
        assert!(check_below("x", &[0, 1, 2], 3).is_ok());
        match check_below("column of entry", &[0, 5, 3, 9], 4) {
            Err(CudaError::IndexOutOfRange {
                what,
                index,
                value,
                bound,
            }) => {
                assert_eq!((what, index, value, bound), ("column of entry", 1, 5, 4));
            }
            other => panic!("expected IndexOutOfRange, got {other:?}"),
        }
    }

    #[test]
    fn device_sizes_count_every_array() {
        assert_eq!(DeviceCsr::bytes_for(10, 20, 3), (11 + 40) * 4 + 3 * 32);
        assert_eq!(DeviceCsr::bytes_for(0, 0, 2), (1 + 2) * 4 + 64);
        assert_eq!(DeviceBitmap::bytes_for(65), 2 * 12);
        assert_eq!(DeviceBitmap::bytes_for(0), 12);
    }
}
