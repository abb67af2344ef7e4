//! Where a native generator's aux values go: a growing vector, or a packed assignment (the
//! zeros and ones as bits: how a PoRep partition's challenges write theirs, each its own, in
//! parallel).

use cuzk_field::Scalar;
use cuzk_synth::PackedAux;
use ff::Field;

/// An aux assignment being appended to, in allocation order.
pub trait Sink {
    /// Appends one value.
    fn push(&mut self, v: Scalar);
    /// Appends every value of `values`, in order.
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I);
    /// Appends `n` (at most 64) values that are bits: bit `j` of `x` is value `j`'s.
    #[inline]
    fn bits(&mut self, x: u64, n: u32) {
        self.extend((0..n).map(|j| {
            if x >> j & 1 == 1 {
                Scalar::ONE
            } else {
                Scalar::ZERO
            }
        }));
    }
    /// Makes room for `additional` more values where the sink can grow.
    fn reserve(&mut self, additional: usize);
    /// How many values were appended.
    fn len(&self) -> usize;
    /// Whether nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Sink for Vec<Scalar> {
    #[inline(always)]
    fn push(&mut self, v: Scalar) {
        Vec::push(self, v);
    }

    #[inline(always)]
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I) {
        Extend::extend(self, values);
    }

    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }

    fn len(&self) -> usize {
        Vec::len(self)
    }
}

impl Sink for PackedAux {
    #[inline(always)]
    fn push(&mut self, v: Scalar) {
        PackedAux::push(self, v);
    }

    #[inline]
    fn extend<I: IntoIterator<Item = Scalar>>(&mut self, values: I) {
        for v in values {
            PackedAux::push(self, v);
        }
    }

    #[inline(always)]
    fn bits(&mut self, x: u64, n: u32) {
        self.push_bits(x, n);
    }

    fn reserve(&mut self, additional: usize) {
        PackedAux::reserve(self, additional, 0);
    }

    fn len(&self) -> usize {
        PackedAux::len(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sinks_take_the_same_values() {
        let mut v: Vec<Scalar> = Vec::new();
        let mut p = PackedAux::new();
        fn write(s: &mut impl Sink) {
            s.push(Scalar::from(7u64));
            s.bits(0b1011, 4);
            s.extend([Scalar::ONE, Scalar::ZERO, -Scalar::ONE]);
            s.bits(u64::MAX, 64);
            s.bits(0b10, 2);
        }
        write(&mut v);
        write(&mut p);
        assert_eq!(Sink::len(&v), 1 + 4 + 3 + 64 + 2);
        assert_eq!(Sink::len(&p), Sink::len(&v));
        assert_eq!(p.to_values(), v);
        assert_eq!(v[1..5], [1u64, 1, 0, 1].map(Scalar::from));
    }
}
