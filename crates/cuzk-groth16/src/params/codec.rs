//! Encoding and decoding of single curve points in the uncompressed form of parameter files,
//! and the bulk, parallel versions the section reader and writer use.

use crate::error::{Error, PointError, Result, Section};
use cuzk_field::{G1Affine, G2Affine, PrimeCurveAffine};
use rayon::prelude::*;
use std::io::{self, Read, Write};

/// Points decoded or encoded per parallel batch: large enough to keep every core busy,
/// small enough that a corrupt length prefix cannot make us allocate a huge buffer up front.
const BATCH_POINTS: usize = 1 << 15;

/// A curve point stored uncompressed in parameter files (x then y, big-endian, with
/// blst/zcash flag bits in the first byte).
pub(crate) trait UncompressedPoint: Copy + Send + Sync + PrimeCurveAffine {
    /// Bytes of one uncompressed point.
    const SIZE: usize;

    /// Decodes one point. blst always rejects bad encodings and points off the curve;
    /// `checked` adds the (much more expensive) prime-order subgroup check.
    fn decode(bytes: &[u8], checked: bool) -> Result<Self, PointError>;

    /// Writes the uncompressed encoding into `out` (exactly `SIZE` bytes).
    fn encode(&self, out: &mut [u8]);
}

impl UncompressedPoint for G1Affine {
    const SIZE: usize = 96;

    fn decode(bytes: &[u8], checked: bool) -> Result<Self, PointError> {
        let arr: &[u8; 96] = bytes.try_into().expect("caller passes exactly SIZE bytes");
        let p: Option<G1Affine> = G1Affine::from_uncompressed_unchecked(arr).into();
        let p = p.ok_or(PointError::NotOnCurve)?;
        if checked && !bool::from(p.is_torsion_free()) {
            return Err(PointError::NotInSubgroup);
        }
        Ok(p)
    }

    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

impl UncompressedPoint for G2Affine {
    const SIZE: usize = 192;

    fn decode(bytes: &[u8], checked: bool) -> Result<Self, PointError> {
        let arr: &[u8; 192] = bytes.try_into().expect("caller passes exactly SIZE bytes");
        let p: Option<G2Affine> = G2Affine::from_uncompressed_unchecked(arr).into();
        let p = p.ok_or(PointError::NotOnCurve)?;
        if checked && !bool::from(p.is_torsion_free()) {
            return Err(PointError::NotInSubgroup);
        }
        Ok(p)
    }

    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_uncompressed());
    }
}

/// Reads until `buf` is full or the data ends; returns the bytes read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Reads a section's 4-byte big-endian length prefix.
pub(crate) fn read_len<R: Read>(reader: &mut R, section: Section) -> Result<usize> {
    let mut raw = [0u8; 4];
    if read_full(reader, &mut raw)? < 4 {
        return Err(Error::MissingLength { section });
    }
    Ok(u32::from_be_bytes(raw) as usize)
}

/// Writes a section's 4-byte big-endian length prefix.
pub(crate) fn write_len<W: Write>(writer: &mut W, len: usize) -> io::Result<()> {
    let len = u32::try_from(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "a section holds more than 2^32 - 1 points",
        )
    })?;
    writer.write_all(&len.to_be_bytes())
}

/// Reads and decodes `count` points of `section`, batch by batch, decoding each batch in
/// parallel. Identity points are rejected when `allow_identity` is false (every query
/// section of honest parameters). On a bad point, the lowest failing index is reported.
pub(crate) fn read_points<P: UncompressedPoint, R: Read>(
    reader: &mut R,
    section: Section,
    count: usize,
    checked: bool,
    allow_identity: bool,
) -> Result<Vec<P>> {
    let mut out: Vec<P> = Vec::with_capacity(count.min(BATCH_POINTS));
    let mut buf = vec![0u8; count.min(BATCH_POINTS) * P::SIZE];
    while out.len() < count {
        let batch = (count - out.len()).min(BATCH_POINTS);
        let bytes = &mut buf[..batch * P::SIZE];
        let got = read_full(reader, bytes)?;
        if got < bytes.len() {
            return Err(Error::Truncated {
                section,
                expected: count,
                found: out.len() + got / P::SIZE,
            });
        }
        let start = out.len();
        out.resize(start + batch, P::identity());
        let failure = out[start..]
            .par_iter_mut()
            .zip(bytes.par_chunks_exact(P::SIZE))
            .enumerate()
            .filter_map(|(i, (slot, raw))| {
                let decoded = P::decode(raw, checked).and_then(|p| {
                    if !allow_identity && bool::from(p.is_identity()) {
                        Err(PointError::Identity)
                    } else {
                        Ok(p)
                    }
                });
                match decoded {
                    Ok(p) => {
                        *slot = p;
                        None
                    }
                    Err(reason) => Some((i, reason)),
                }
            })
            .min_by_key(|&(i, _)| i);
        if let Some((i, reason)) = failure {
            return Err(Error::InvalidPoint {
                section,
                index: start + i,
                reason,
            });
        }
    }
    Ok(out)
}

/// Reads one fixed point of the verifying key (always fully checked, as these are few).
pub(crate) fn read_single<P: UncompressedPoint, R: Read>(
    reader: &mut R,
    section: Section,
) -> Result<P> {
    let mut raw = vec![0u8; P::SIZE];
    if read_full(reader, &mut raw)? < P::SIZE {
        return Err(Error::Truncated {
            section,
            expected: 1,
            found: 0,
        });
    }
    P::decode(&raw, true).map_err(|reason| Error::InvalidPoint {
        section,
        index: 0,
        reason,
    })
}

/// Encodes points batch by batch (in parallel) and writes them, without a length prefix.
pub(crate) fn write_points<P: UncompressedPoint, W: Write>(
    writer: &mut W,
    points: &[P],
) -> io::Result<()> {
    let mut buf = vec![0u8; points.len().min(BATCH_POINTS) * P::SIZE];
    for batch in points.chunks(BATCH_POINTS) {
        let bytes = &mut buf[..batch.len() * P::SIZE];
        bytes
            .par_chunks_exact_mut(P::SIZE)
            .zip(batch.par_iter())
            .for_each(|(out, p)| p.encode(out));
        writer.write_all(bytes)?;
    }
    Ok(())
}
