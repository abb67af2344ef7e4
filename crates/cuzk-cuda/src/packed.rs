//! A witness packed for its trip to the device and unpacked there (`cuzk_eval_unpack` in
//! `kernels/eval/eval.cu`). Most values of real circuits' witnesses are 0 or 1, so a value
//! travels as two bits — "is one" and "is other" — and only the other values travel whole,
//! in order, with the count of other values before each 64-bit word. For a witness of 99%
//! bits that is about 0.07 of the 32 bytes a value takes unpacked.
//!
//! The kernel reads the other values where the counts point, so [`DevicePacked::upload`]
//! checks every count first: a [`DevicePacked`] that exists is safe to unpack.
#![allow(unsafe_code)] // The launch of cuzk_eval_unpack, checked against its signature.

use crate::field::same_len as same;
use crate::sparse::launch_config;
use crate::{CudaError, DeviceBuffer, DeviceViewMut, PinnedBuffer, Result, Stream};
use cuzk_field::FrRepr;

/// A packed witness of `len` values in pinned host memory (see the module docs). Each bit
/// array holds `len.div_ceil(64)` words (one word when `len` is 0), bit `i` in bit `i % 64`
/// of word `i / 64`, no bit set from `len` on; `offsets[w]` is the count of `others` bits
/// set in the words before `w`; `values` holds at least as many values as `others` has set
/// bits (one when it has none: the driver refuses empty allocations).
#[derive(Clone, Copy, Debug)]
pub struct PinnedPacked<'a> {
    /// Bit `i`: value `i` is ONE.
    pub ones: &'a PinnedBuffer<u64>,
    /// Bit `i`: value `i` is neither 0 nor 1 and travels whole.
    pub others: &'a PinnedBuffer<u64>,
    /// Set bits of `others` before each word.
    pub offsets: &'a PinnedBuffer<u32>,
    /// The other values, in order.
    pub values: &'a PinnedBuffer<FrRepr>,
    /// Values in the witness.
    pub len: usize,
}

impl PinnedPacked<'_> {
    /// Bytes that cross to the device.
    pub fn bytes(&self) -> u64 {
        (self.ones.size_bytes()
            + self.others.size_bytes()
            + self.offsets.size_bytes()
            + self.values.size_bytes()) as u64
    }

    /// Checks the layout the module docs and [`PinnedPacked`] state; returns the count of
    /// other values. Reads the bit arrays on the host (a few milliseconds for 2^27 values).
    fn check(&self) -> Result<usize> {
        check_layout(
            self.len,
            self.ones.as_slice()?,
            self.others.as_slice()?,
            self.offsets.as_slice()?,
            self.values.len(),
        )
    }

    /// Words of a bit array for `len` values (one for none).
    pub fn words_for(len: usize) -> usize {
        len.div_ceil(64).max(1)
    }
}

/// [`PinnedPacked`]'s layout over host slices: word counts, no bit set from `len` on, each
/// offset the count of others before its word, and no more others than `values`.
fn check_layout(
    len: usize,
    ones: &[u64],
    others: &[u64],
    offsets: &[u32],
    values: usize,
) -> Result<usize> {
    let words = PinnedPacked::words_for(len);
    same("bits of the ones (64 a word)", words, ones.len())?;
    same("bits of the others (64 a word)", words, others.len())?;
    same("counts of other values (one a word)", words, offsets.len())?;
    for (what, bits) in [
        ("set bit of the ones", ones),
        ("set bit of the others", others),
    ] {
        if let Some(at) = tail_bit(bits[words - 1], len) {
            return Err(CudaError::IndexOutOfRange {
                what,
                index: words - 1,
                value: (words as u64 - 1) * 64 + at,
                bound: len as u64,
            });
        }
    }
    let mut count = 0u64;
    for (&offset, &word) in offsets.iter().zip(others) {
        if u64::from(offset) != count {
            return Err(CudaError::LengthMismatch {
                what: "count of other values before a word (the others' set bits before it)",
                expected: count as usize,
                got: offset as usize,
            });
        }
        count += u64::from(word.count_ones());
    }
    let bound = (values as u64).min(u64::from(u32::MAX));
    if count > bound {
        return Err(CudaError::IndexOutOfRange {
            what: "other values (the set bits of the others)",
            index: words - 1,
            value: count,
            bound: bound + 1,
        });
    }
    Ok(count as usize)
}

/// The position of the first bit set from `len % 64` on in the last word, if any.
fn tail_bit(last: u64, len: usize) -> Option<u64> {
    let used = len % 64;
    if len > 0 && used == 0 {
        return None;
    }
    let tail = last >> used;
    (tail != 0).then(|| used as u64 + u64::from(tail.trailing_zeros()))
}

/// A packed witness on the device, ready to [`unpack`].
#[derive(Debug)]
pub struct DevicePacked {
    ones: DeviceBuffer<u64>,
    others: DeviceBuffer<u64>,
    offsets: DeviceBuffer<u32>,
    values: DeviceBuffer<FrRepr>,
    len: usize,
}

impl DevicePacked {
    /// Checks `host` (see [`PinnedPacked`]) and queues its copies on `stream`; the host does
    /// not wait. The pinned buffers' accessors, and dropping them, wait for the copies.
    pub fn upload(stream: &Stream, host: &PinnedPacked<'_>) -> Result<DevicePacked> {
        host.check()?;
        let copy = |src: &PinnedBuffer<u64>| -> Result<DeviceBuffer<u64>> {
            let mut dst = stream.alloc::<u64>(src.len())?;
            stream.copy_pinned_to_device(src, &mut dst)?;
            Ok(dst)
        };
        let (ones, others) = (copy(host.ones)?, copy(host.others)?);
        let mut offsets = stream.alloc::<u32>(host.offsets.len())?;
        stream.copy_pinned_to_device(host.offsets, &mut offsets)?;
        let mut values = stream.alloc::<FrRepr>(host.values.len())?;
        stream.copy_pinned_to_device(host.values, &mut values)?;
        Ok(DevicePacked {
            ones,
            others,
            offsets,
            values,
            len: host.len,
        })
    }

    /// Values in the witness.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the witness has no values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Queues writing the `packed.len()` values of `packed` into `out` (that long), unpacked.
pub fn unpack(
    stream: &Stream,
    packed: &DevicePacked,
    out: &mut DeviceViewMut<'_, FrRepr>,
) -> Result<()> {
    same(
        "unpacked witness (the packed values)",
        packed.len,
        out.len(),
    )?;
    if packed.len == 0 {
        return Ok(());
    }
    let kernel = stream.device().kernel("cuzk_eval_unpack")?;
    let len = packed.len as u64;
    let cfg = launch_config(stream, packed.len);
    // SAFETY: cuzk_eval_unpack is (fr_t* out, const uint64_t* ones, const uint64_t* others,
    // const uint32_t* offsets, const fr_t* values, uint64_t len), pushed in that order. It
    // writes out[0..len) (out has len elements), reads ones, others and offsets at
    // i / 64 < len.div_ceil(64) (each has that many words, checked at upload), and values at
    // offsets[i / 64] + set bits below i in its word of others, below the set bits of others
    // up to word i / 64, which is at most values' length (offsets checked at upload to be
    // those counts). No shared memory.
    unsafe {
        stream
            .launch(&kernel)
            .view_mut(out)
            .buf(&packed.ones)
            .buf(&packed.others)
            .buf(&packed.offsets)
            .buf(&packed.values)
            .arg(&len)
            .launch(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_bits_are_found_past_the_length_only() {
        assert_eq!(tail_bit(0b0111, 3), None);
        assert_eq!(tail_bit(0b1111, 3), Some(3));
        assert_eq!(tail_bit(1 << 40, 3), Some(40));
        assert_eq!(tail_bit(u64::MAX, 64), None);
        assert_eq!(tail_bit(u64::MAX, 128), None);
        assert_eq!(tail_bit(0, 0), None);
        assert_eq!(tail_bit(1, 0), Some(0));
    }

    #[test]
    fn layouts_that_would_read_out_of_bounds_are_refused() {
        // Values 0..70: others at 1 and 65, ones at 2.
        let (ones, others, offsets) = ([0b100u64, 0], [0b10u64, 0b10], [0u32, 1]);
        assert_eq!(check_layout(70, &ones, &others, &offsets, 2).unwrap(), 2);
        assert_eq!(check_layout(70, &ones, &others, &offsets, 5).unwrap(), 2);
        let too_few = check_layout(70, &ones, &others, &offsets, 1);
        assert!(
            matches!(too_few, Err(CudaError::IndexOutOfRange { value: 2, .. })),
            "{too_few:?}"
        );
        let skewed = check_layout(70, &ones, &others, &[0, 2], 3);
        assert!(matches!(
            skewed,
            Err(CudaError::LengthMismatch {
                expected: 1,
                got: 2,
                ..
            })
        ));
        let stray = check_layout(70, &ones, &[0b10, 1 << 6], &offsets, 2);
        assert!(matches!(
            stray,
            Err(CudaError::IndexOutOfRange {
                value: 70,
                bound: 70,
                ..
            })
        ));
        let short = check_layout(130, &ones, &others, &offsets, 2);
        assert!(matches!(
            short,
            Err(CudaError::LengthMismatch {
                expected: 3,
                got: 2,
                ..
            })
        ));
        assert_eq!(check_layout(0, &[0], &[0], &[0], 1).unwrap(), 0);
        assert!(check_layout(0, &[1], &[0], &[0], 1).is_err());
    }

    #[test]
    fn one_word_for_no_values() {
        assert_eq!(PinnedPacked::words_for(0), 1);
        assert_eq!(PinnedPacked::words_for(64), 1);
        assert_eq!(PinnedPacked::words_for(65), 2);
    }
}
