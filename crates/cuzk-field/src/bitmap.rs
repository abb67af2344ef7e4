//! A fixed-length bitmap over variables, stored as little-endian `u64` words: the density
//! of a circuit's queries (which variables A and B use), read by synthesis, the MSMs and the
//! GPU.

/// A bitmap over variables (one bit per input or aux variable).
///
/// Bit `i` lives in `words()[i / 64]` at bit position `i % 64`; bits past `len()` in the last
/// word are always zero, so the words can be handed to other code (or a GPU) as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bitmap {
    words: Vec<u64>,
    len: usize,
}

impl Bitmap {
    /// An all-zero bitmap of `len` bits.
    pub fn new(len: usize) -> Bitmap {
        Bitmap {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the bitmap has no bits at all.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bit `i`. Panics if `i >= len()`.
    pub fn get(&self, i: usize) -> bool {
        assert!(
            i < self.len,
            "bit {i} out of range for a bitmap of {} bits",
            self.len
        );
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Sets bit `i`. Panics if `i >= len()`.
    pub fn set(&mut self, i: usize) {
        assert!(
            i < self.len,
            "bit {i} out of range for a bitmap of {} bits",
            self.len
        );
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Indices of the set bits, ascending.
    pub fn iter_ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(k * 64 + bit)
            })
        })
    }

    /// The backing words (`len().div_ceil(64)` of them).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
        if bit {
            self.set(self.len - 1);
        }
    }

    /// Appends bits `skip..` of `other`.
    pub fn append_from(&mut self, other: &Bitmap, skip: usize) {
        for i in skip..other.len {
            self.push(other.get(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_count_iter() {
        let mut b = Bitmap::new(130);
        assert_eq!(b.words().len(), 3);
        for i in [0, 63, 64, 129] {
            b.set(i);
        }
        assert!(b.get(63) && b.get(64) && !b.get(65));
        assert_eq!(b.count_ones(), 4);
        assert_eq!(b.iter_ones().collect::<Vec<_>>(), vec![0, 63, 64, 129]);
        assert!(Bitmap::new(0).is_empty());
    }

    #[test]
    fn push_and_append_match_set() {
        let mut pushed = Bitmap::default();
        let mut direct = Bitmap::new(200);
        for i in 0..200 {
            pushed.push(i % 3 == 0);
            if i % 3 == 0 {
                direct.set(i);
            }
        }
        assert_eq!(pushed, direct);
        let mut appended = Bitmap::default();
        appended.push(true);
        appended.append_from(&direct, 1);
        assert_eq!(appended, direct);
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn get_out_of_range_panics() {
        Bitmap::new(3).get(3);
    }
}
