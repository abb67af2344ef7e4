//! Bit decompositions the circuit allocates before it hashes: `AllocatedNum::to_bits_le` of a
//! field element and storage-proofs' `reverse_bit_numbering`, computed natively.

use crate::{Bit, Sink};
use cuzk_field::Scalar;
use ff::{Field, PrimeField};

/// Bits of a field element's decomposition (`Scalar::NUM_BITS`).
pub(crate) const NUM_BITS: usize = Scalar::NUM_BITS as usize;

/// A bit's variable as `AllocatedBit::alloc` assigns it.
pub(crate) fn scalar(b: bool) -> Scalar {
    if b {
        Scalar::ONE
    } else {
        Scalar::ZERO
    }
}

/// `AllocatedNum::to_bits_le` (bellpepper-core's `field_into_allocated_bits_le`): appends the
/// 255 bits of `value`, least significant first, each its own variable, and returns them.
pub(crate) fn num_to_bits_le(value: Scalar, aux: &mut impl Sink) -> Vec<Bit> {
    // The representation is little-endian; the top bit of the 256 is always zero.
    let repr = value.to_repr();
    let bits: Vec<Bit> = (0..NUM_BITS)
        .map(|i| Bit::Is((repr[i / 8] >> (i % 8)) & 1 == 1))
        .collect();
    for (k, word) in repr.chunks_exact(8).enumerate() {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        aux.bits(x, (NUM_BITS - 64 * k).min(64) as u32);
    }
    bits
}

/// storage-proofs' `reverse_bit_numbering`: constant zeros up to a whole byte, then each
/// byte's bits reversed (so that little-endian bits read as the bytes' big-endian bits, the
/// order SHA-256 takes them in).
pub(crate) fn reverse_bit_numbering(mut bits: Vec<Bit>) -> Vec<Bit> {
    bits.resize(bits.len().next_multiple_of(8), Bit::Constant(false));
    for byte in bits.chunks_exact_mut(8) {
        byte.reverse();
    }
    bits
}

/// `multipack::pack_into_inputs`' value of one chunk (at most `CAPACITY` bits, least
/// significant first).
pub(crate) fn pack_le(bits: &[bool]) -> Scalar {
    bits.iter()
        .rev()
        .fold(Scalar::ZERO, |acc, &b| acc.double() + scalar(b))
}

/// `multipack::pack_bits` of a digest as the SHA-256 hashers pack it: bits reversed within
/// each byte, so the digest reads as a little-endian number, of which the low `CAPACITY`
/// (254) bits.
pub(crate) fn pack_digest(bytes: [u8; 32]) -> Scalar {
    let mut repr = bytes;
    repr[31] &= 0x3f;
    Option::from(Scalar::from_repr(repr)).expect("254 bits are below the modulus")
}
