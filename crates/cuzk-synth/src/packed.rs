//! An aux assignment packed as a generator writes it: the zeros and ones as bits, every other
//! value whole. A PoRep witness is about 99% bits (SHA-256 gadgets), so a 32 GiB partition's
//! 4.2 GB assignment packs into 87 MB; the GPU expands it on the device.

use cuzk_field::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Words (of 64 values) per block of the parallel expansion.
const BLOCK_WORDS: usize = 1 << 10;

/// An aux assignment of `len` values: bit `i % 64` of word `i / 64` of `ones` is set when value
/// `i` is one, of `others` when it is neither zero nor one, and the others are `values`, in
/// order. Both bit arrays have exactly `len.div_ceil(64)` words and no bit set from `len` on,
/// so equal assignments pack equally.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedAux {
    ones: Vec<u64>,
    others: Vec<u64>,
    values: Vec<Scalar>,
    len: usize,
}

impl PackedAux {
    /// An empty assignment.
    pub fn new() -> PackedAux {
        PackedAux::default()
    }

    /// An empty assignment with room for `len` values, `others` of them neither zero nor one.
    pub fn with_capacity(len: usize, others: usize) -> PackedAux {
        let words = len.div_ceil(64);
        PackedAux {
            ones: Vec::with_capacity(words),
            others: Vec::with_capacity(words),
            values: Vec::with_capacity(others),
            len: 0,
        }
    }

    /// `aux` packed.
    pub fn from_values(aux: &[Scalar]) -> PackedAux {
        let mut p = PackedAux::with_capacity(aux.len(), 0);
        for &v in aux {
            p.push(v);
        }
        p
    }

    /// Values in the assignment.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no value.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The "is one" bits.
    pub fn ones(&self) -> &[u64] {
        &self.ones
    }

    /// The "is neither zero nor one" bits.
    pub fn others(&self) -> &[u64] {
        &self.others
    }

    /// The values that are neither zero nor one, in order.
    pub fn values(&self) -> &[Scalar] {
        &self.values
    }

    /// Bytes it holds (the bit arrays and the other values).
    pub fn bytes(&self) -> u64 {
        (16 * self.ones.len() + std::mem::size_of::<Scalar>() * self.values.len()) as u64
    }

    /// Bytes its allocations hold (what it can take without growing).
    pub fn capacity_bytes(&self) -> u64 {
        (8 * (self.ones.capacity() + self.others.capacity())
            + std::mem::size_of::<Scalar>() * self.values.capacity()) as u64
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.ones.clear();
        self.others.clear();
        self.values.clear();
        self.len = 0;
    }

    /// Makes room for `len` more values, `others` of them neither zero nor one.
    pub fn reserve(&mut self, len: usize, others: usize) {
        let words = (self.len + len)
            .div_ceil(64)
            .saturating_sub(self.ones.len());
        self.ones.reserve(words);
        self.others.reserve(words);
        self.values.reserve(others);
    }

    /// Appends one value.
    #[inline]
    pub fn push(&mut self, v: Scalar) {
        if v == Scalar::ZERO {
            self.push_bits(0, 1);
        } else if v == Scalar::ONE {
            self.push_bits(1, 1);
        } else {
            let bit = self.len % 64;
            self.push_bits(0, 1);
            *self.others.last_mut().expect("a word was pushed") |= 1 << bit;
            self.values.push(v);
        }
    }

    /// Appends `n` (at most 64) values that are bits: bit `j` of `x` is value `j`'s (bits of
    /// `x` from `n` on are ignored).
    #[inline]
    pub fn push_bits(&mut self, x: u64, n: u32) {
        debug_assert!(n <= 64);
        if n == 0 {
            return;
        }
        let x = if n == 64 { x } else { x & ((1u64 << n) - 1) };
        let bit = (self.len % 64) as u32;
        if bit == 0 {
            self.ones.push(x);
            self.others.push(0);
        } else {
            *self.ones.last_mut().expect("a partial word") |= x << bit;
            if bit + n > 64 {
                self.ones.push(x >> (64 - bit));
                self.others.push(0);
            }
        }
        self.len += n as usize;
    }

    /// Appends every value of `other`, in order.
    pub fn append(&mut self, other: &PackedAux) {
        self.reserve(other.len, other.values.len());
        if self.len.is_multiple_of(64) {
            self.ones.extend_from_slice(&other.ones);
            self.others.extend_from_slice(&other.others);
            self.len += other.len;
        } else {
            let bit = (self.len % 64) as u32;
            let mut left = other.len;
            for (&one, &oth) in other.ones.iter().zip(&other.others) {
                let n = left.min(64) as u32;
                // The "others" word takes the shift the "ones" word took.
                let last = self.ones.len() - 1;
                self.push_bits(one, n);
                let oth = if n == 64 {
                    oth
                } else {
                    oth & ((1u64 << n) - 1)
                };
                self.others[last] |= oth << bit;
                if bit + n > 64 {
                    self.others[last + 1] |= oth >> (64 - bit);
                }
                left -= n as usize;
            }
        }
        self.values.extend_from_slice(&other.values);
        debug_assert_eq!(self.ones.len(), self.len.div_ceil(64));
    }

    /// The values, one by one (expanded in parallel blocks).
    pub fn to_values(&self) -> Vec<Scalar> {
        let mut out = vec![Scalar::ZERO; self.len];
        self.expand_into(&mut out);
        out
    }

    /// Writes the values into `out` (exactly [`PackedAux::len`] long).
    pub fn expand_into(&self, out: &mut [Scalar]) {
        assert_eq!(out.len(), self.len, "an output of the assignment's length");
        let block_values = BLOCK_WORDS * 64;
        let mut start = 0usize;
        let starts: Vec<usize> = self
            .others
            .chunks(BLOCK_WORDS)
            .map(|words| {
                let s = start;
                start += words.iter().map(|w| w.count_ones() as usize).sum::<usize>();
                s
            })
            .collect();
        out.par_chunks_mut(block_values)
            .zip(self.ones.par_chunks(BLOCK_WORDS))
            .zip(self.others.par_chunks(BLOCK_WORDS))
            .zip(starts)
            .for_each(|(((out, ones), others), mut at)| {
                for (w, chunk) in out.chunks_mut(64).enumerate() {
                    let (one, other) = (ones[w], others[w]);
                    for (bit, slot) in chunk.iter_mut().enumerate() {
                        *slot = if other >> bit & 1 == 1 {
                            at += 1;
                            self.values[at - 1]
                        } else if one >> bit & 1 == 1 {
                            Scalar::ONE
                        } else {
                            Scalar::ZERO
                        };
                    }
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A value of kind 0 (zero), 1 (one) or else a small other value.
    fn value(kind: u8, seed: u64) -> Scalar {
        match kind % 3 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::from(seed | 2),
        }
    }

    fn values(kinds: &[(u8, u64)]) -> Vec<Scalar> {
        kinds.iter().map(|&(k, s)| value(k, s)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn packing_keeps_every_value_and_appending_equals_packing_the_concatenation(
            a in prop::collection::vec((any::<u8>(), any::<u64>()), 0..300),
            b in prop::collection::vec((any::<u8>(), any::<u64>()), 0..300),
            c in prop::collection::vec((any::<u8>(), any::<u64>()), 0..70_000),
        ) {
            let (a, b, c) = (values(&a), values(&b), values(&c));
            let mut joined = PackedAux::from_values(&a);
            prop_assert_eq!(joined.to_values(), a.clone());
            joined.append(&PackedAux::from_values(&b));
            joined.append(&PackedAux::from_values(&c));
            let all: Vec<Scalar> = a.iter().chain(&b).chain(&c).copied().collect();
            prop_assert_eq!(&joined, &PackedAux::from_values(&all));
            prop_assert_eq!(joined.to_values(), all);
        }

        #[test]
        fn bits_pushed_in_words_equal_bits_pushed_one_by_one(
            words in prop::collection::vec((any::<u64>(), 0u32..=64), 0..40),
            lead in 0usize..70,
        ) {
            let mut fast = PackedAux::from_values(&vec![Scalar::from(5u64); lead]);
            let mut slow = fast.clone();
            for &(x, n) in &words {
                fast.push_bits(x, n);
                for j in 0..n {
                    slow.push(if x >> j & 1 == 1 { Scalar::ONE } else { Scalar::ZERO });
                }
            }
            prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn the_bits_name_ones_and_others_and_nothing_past_the_end() {
        let two = Scalar::from(2u64);
        let p =
            PackedAux::from_values(&[Scalar::ZERO, Scalar::ONE, two, -Scalar::ONE, Scalar::ONE]);
        assert_eq!(p.ones(), [0b10010]);
        assert_eq!(p.others(), [0b01100]);
        assert_eq!(p.values(), [two, -Scalar::ONE]);
        assert_eq!((p.len(), p.bytes()), (5, 16 + 64));
        assert!(PackedAux::new().to_values().is_empty());
    }
}
