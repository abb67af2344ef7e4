//! A gadget's `UInt32` on machine words, and the operations SHA-256 applies to it.
//!
//! Each operation appends to `aux` what its bellpepper counterpart allocates, in order. A
//! word whose bits are all variables takes a mask path; a word with constant bits (the IV,
//! padding, round constants mixed in) goes bit by bit through the gadget's case analysis.

use crate::{Bit, Sink};
use cuzk_field::Scalar;
use ff::Field;

/// The scalars of `false` and `true`.
const SCALARS: [Scalar; 2] = [Scalar::ZERO, Scalar::ONE];

/// Appends one allocated bit.
#[inline(always)]
fn push(aux: &mut impl Sink, b: bool) {
    aux.push(SCALARS[usize::from(b)]);
}

/// The bits of `x` at the even positions of a word (bit i at bit 2i).
#[inline]
fn spread(x: u32) -> u64 {
    let mut v = u64::from(x);
    v = (v | v << 16) & 0x0000_ffff_0000_ffff;
    v = (v | v << 8) & 0x00ff_00ff_00ff_00ff;
    v = (v | v << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    v = (v | v << 2) & 0x3333_3333_3333_3333;
    (v | v << 1) & 0x5555_5555_5555_5555
}

/// Appends the bits of `x` at the set positions of `mask`, lowest first.
#[inline]
fn push_masked(aux: &mut impl Sink, x: u32, mask: u32) {
    if mask == u32::MAX {
        aux.bits(u64::from(x), 32);
    } else {
        // The selected bits, gathered to the low end in order (a software `pext`).
        let (mut m, mut packed, mut n) = (mask, 0u64, 0u32);
        while m != 0 {
            let i = m.trailing_zeros();
            packed |= u64::from((x >> i) & 1) << n;
            n += 1;
            m &= m - 1;
        }
        aux.bits(packed, n);
    }
}

/// 32 gadget bits, bit `i` being the `UInt32`'s bit `i` (least significant first).
///
/// A variable's own value is `value ^ negated` at its bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word {
    /// Each bit's value (`Boolean::get_value`); the word's value (`UInt32`'s).
    pub(crate) value: u32,
    /// The bits that are constants.
    pub(crate) constant: u32,
    /// The bits that are negated variables; never a constant's.
    pub(crate) negated: u32,
}

impl Word {
    /// `UInt32::constant`.
    pub(crate) const fn constant(value: u32) -> Word {
        Word {
            value,
            constant: u32::MAX,
            negated: 0,
        }
    }

    /// `UInt32::from_bits_be` of 32 bits, most significant first.
    pub(crate) fn from_bits_be(bits: &[Bit]) -> Word {
        debug_assert_eq!(bits.len(), 32);
        let mut w = Word::constant(0);
        for (j, &b) in bits.iter().enumerate() {
            w.set(31 - j as u32, b);
        }
        w
    }

    /// Bit `i` as a gadget holds it.
    pub(crate) fn bit(self, i: u32) -> Bit {
        let v = (self.value >> i) & 1 == 1;
        if (self.constant >> i) & 1 == 1 {
            Bit::Constant(v)
        } else if (self.negated >> i) & 1 == 1 {
            Bit::Not(v)
        } else {
            Bit::Is(v)
        }
    }

    /// Sets bit `i` to `b`.
    fn set(&mut self, i: u32, b: Bit) {
        let m = 1u32 << i;
        let (v, c, n) = match b {
            Bit::Constant(v) => (v, true, false),
            Bit::Is(v) => (v, false, false),
            Bit::Not(v) => (v, false, true),
        };
        self.value = (self.value & !m) | (u32::from(v) << i);
        self.constant = (self.constant & !m) | (u32::from(c) << i);
        self.negated = (self.negated & !m) | (u32::from(n) << i);
    }

    /// Whether no bit is a constant.
    fn all_variables(self) -> bool {
        self.constant == 0
    }

    /// `UInt32::rotr`.
    pub(crate) fn rotr(self, by: u32) -> Word {
        Word {
            value: self.value.rotate_right(by),
            constant: self.constant.rotate_right(by),
            negated: self.negated.rotate_right(by),
        }
    }

    /// `UInt32::shr`: the bits shifted in are constant zeros.
    pub(crate) fn shr(self, by: u32) -> Word {
        Word {
            value: self.value >> by,
            constant: (self.constant >> by) | !(u32::MAX >> by),
            negated: self.negated >> by,
        }
    }

    /// `UInt32::xor`: one variable per bit where both are variables; a constant bit passes
    /// the other through, negated when it is one.
    pub(crate) fn xor(self, other: Word, aux: &mut impl Sink) -> Word {
        let both = !self.constant & !other.constant;
        let own = self.value ^ self.negated;
        let others = other.value ^ other.negated;
        push_masked(aux, own ^ others, both);
        let constant = self.constant & other.constant;
        let flips = (self.value & self.constant) ^ (other.value & other.constant);
        Word {
            value: self.value ^ other.value,
            constant,
            negated: (self.negated ^ other.negated ^ flips) & !constant,
        }
    }

    /// `UInt32::sha256_ch(e, f, g)`: `(e & f) ^ (!e & g)`.
    pub(crate) fn ch(e: Word, f: Word, g: Word, aux: &mut impl Sink) -> Word {
        let value = (e.value & f.value) ^ (!e.value & g.value);
        if e.all_variables() && f.all_variables() && g.all_variables() {
            push_masked(aux, value, u32::MAX);
            return Word {
                value,
                constant: 0,
                negated: 0,
            };
        }
        let mut w = Word::constant(0);
        for i in 0..32 {
            w.set(i, bit_ch(e.bit(i), f.bit(i), g.bit(i), aux));
        }
        w
    }

    /// `UInt32::sha256_maj(a, b, c)`: `(a & b) ^ (a & c) ^ (b & c)`.
    pub(crate) fn maj(a: Word, b: Word, c: Word, aux: &mut impl Sink) -> Word {
        let value = (a.value & b.value) ^ (a.value & c.value) ^ (b.value & c.value);
        if a.all_variables() && b.all_variables() && c.all_variables() {
            // Per bit: the majority, then `b & c` (the gadget's helper).
            let bc = b.value & c.value;
            aux.bits(spread(value) | spread(bc) << 1, 64);
            return Word {
                value,
                constant: 0,
                negated: 0,
            };
        }
        let mut w = Word::constant(0);
        for i in 0..32 {
            w.set(i, bit_maj(a.bit(i), b.bit(i), c.bit(i), aux));
        }
        w
    }

    /// `UInt32::addmany`: a constant when every bit of every operand is; otherwise the
    /// bits of the whole sum, as many as the largest possible sum has (33 for two operands,
    /// 35 for five to eight), of which the low 32 are the result.
    pub(crate) fn addmany(ops: &[Word], aux: &mut impl Sink) -> Word {
        debug_assert!((2..=10).contains(&ops.len()));
        let sum: u64 = ops.iter().map(|w| u64::from(w.value)).sum();
        if ops.iter().all(|w| w.constant == u32::MAX) {
            return Word::constant(sum as u32);
        }
        let max = ops.len() as u64 * u64::from(u32::MAX);
        let bits = u64::BITS - max.leading_zeros();
        push_masked(aux, sum as u32, u32::MAX);
        for i in 32..bits {
            push(aux, (sum >> i) & 1 == 1);
        }
        Word {
            value: sum as u32,
            constant: 0,
            negated: 0,
        }
    }
}

/// `Boolean::not`.
fn not(b: Bit) -> Bit {
    match b {
        Bit::Constant(v) => Bit::Constant(!v),
        Bit::Is(v) => Bit::Not(!v),
        Bit::Not(v) => Bit::Is(!v),
    }
}

/// `Boolean::and`: a variable (`and`, `and_not` or `nor` of the two) unless one is a
/// constant.
fn bit_and(a: Bit, b: Bit, aux: &mut impl Sink) -> Bit {
    match (a, b) {
        (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
        (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
        _ => {
            let v = a.value() & b.value();
            push(aux, v);
            Bit::Is(v)
        }
    }
}

/// `Boolean::sha256_ch`, its cases in the gadget's order.
fn bit_ch(a: Bit, b: Bit, c: Bit, aux: &mut impl Sink) -> Bit {
    let v = (a.value() & b.value()) ^ (!a.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), _, c) => c,
        (a, Bit::Constant(false), c) => bit_and(not(a), c, aux),
        (a, b, Bit::Constant(false)) => bit_and(a, b, aux),
        (a, b, Bit::Constant(true)) => not(bit_and(a, not(b), aux)),
        (a, Bit::Constant(true), c) => not(bit_and(not(a), not(c), aux)),
        // A constant true `a` too: the gadget allocates `ch` then.
        _ => {
            push(aux, v);
            Bit::Is(v)
        }
    }
}

/// `Boolean::sha256_maj`, its cases in the gadget's order.
fn bit_maj(a: Bit, b: Bit, c: Bit, aux: &mut impl Sink) -> Bit {
    let v = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
    match (a, b, c) {
        (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(v),
        (Bit::Constant(false), b, c) => bit_and(b, c, aux),
        (a, Bit::Constant(false), c) => bit_and(a, c, aux),
        (a, b, Bit::Constant(false)) => bit_and(a, b, aux),
        (a, b, Bit::Constant(true)) => not(bit_and(not(a), not(b), aux)),
        (a, Bit::Constant(true), c) => not(bit_and(not(a), not(c), aux)),
        (Bit::Constant(true), b, c) => not(bit_and(not(b), not(c), aux)),
        _ => {
            push(aux, v);
            bit_and(b, c, aux);
            Bit::Is(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_of_a_constant_passes_the_other_bit_through() {
        let mut aux = Vec::new();
        let var = Word {
            value: 0b0110,
            constant: 0,
            negated: 0b0100,
        };
        let k = Word::constant(0b1010);
        let x = var.xor(k, &mut aux);
        assert!(aux.is_empty());
        assert_eq!(x.value, 0b1100);
        assert_eq!(x.constant, 0);
        // Bits 1 and 3 flipped by the constant's ones; bit 2 was negated already.
        assert_eq!(x.negated, 0b1110);
        let y = k.xor(var, &mut aux);
        assert_eq!(x, y);
    }

    #[test]
    fn addmany_allocates_the_carry_bits() {
        for (n, bits) in [
            (2, 33),
            (3, 34),
            (4, 34),
            (5, 35),
            (8, 35),
            (9, 36),
            (10, 36),
        ] {
            let mut aux = Vec::new();
            let mut ops = vec![Word::constant(u32::MAX); n];
            ops[0].constant = 1;
            let w = Word::addmany(&ops, &mut aux);
            assert_eq!(aux.len(), bits, "{n} operands");
            assert_eq!(w.value, (n as u64 * u64::from(u32::MAX)) as u32);
        }
        let mut aux = Vec::new();
        let w = Word::addmany(&[Word::constant(7), Word::constant(u32::MAX)], &mut aux);
        assert!(aux.is_empty());
        assert_eq!(w, Word::constant(6));
    }

    #[test]
    fn shr_fills_with_constant_zeros() {
        let w = Word {
            value: u32::MAX,
            constant: 0,
            negated: u32::MAX,
        }
        .shr(10);
        assert_eq!(w.value, u32::MAX >> 10);
        assert_eq!(w.constant, !(u32::MAX >> 10));
        assert_eq!(w.negated, u32::MAX >> 10);
    }
}
