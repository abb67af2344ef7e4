//! The comm_d inclusion proof, natively: storage-proofs-core's `PoRCircuit` over a binary
//! SHA-256 tree (`BinaryMerkleTree<Sha256Hasher>`, no sub or top tree), the leaf and the root
//! already allocated and the root private, as the PoRep circuit's `enforce_inclusion` runs it.

use super::bits::{num_to_bits_le, pack_digest, pack_le, reverse_bit_numbering, scalar};
use super::PorepError;
use crate::{sha256, NativeError, Sink};
use cuzk_field::Scalar;
use ff::PrimeField;

/// One level of the path: the sibling and the leaf's side (`MerkleProofTrait::as_options`).
pub(crate) type Level = (Vec<Option<Scalar>>, Option<usize>);

/// Appends what `PoRCircuit::synthesize` allocates for a path from `leaf` (its aux: per
/// level, the index bit, the sibling, the two `pick`s of `insert`, both children's 255 bits,
/// the hash and its packed number; then its inputs: the index bits packed) and returns the
/// root it computes.
pub(crate) fn comm_d_inclusion(
    leaf: Scalar,
    path: &[Level],
    aux: &mut impl Sink,
    inputs: &mut Vec<Scalar>,
) -> Result<Scalar, PorepError> {
    let mut cur = leaf;
    let mut index_bits = Vec::with_capacity(path.len());
    for (level, (siblings, index)) in path.iter().enumerate() {
        let (sibling, index) = match (siblings.as_slice(), index) {
            ([Some(s)], Some(i)) => (*s, *i),
            _ => return Err(PorepError::CommDPath { level }),
        };
        // Arity 2: one index bit, bit 0 of the position.
        let right = index & 1 == 1;
        aux.push(scalar(right));
        index_bits.push(right);
        aux.push(sibling);
        // `insert_2`: `pick(bit, sibling, cur)` then `pick(bit, cur, sibling)`.
        let (left, right_child) = if right {
            (sibling, cur)
        } else {
            (cur, sibling)
        };
        aux.push(left);
        aux.push(right_child);
        cur = sha256_hash2(left, right_child, aux)?;
    }
    // `multipack::pack_into_inputs` of the index bits, `CAPACITY` bits an input.
    for chunk in index_bits.chunks(Scalar::CAPACITY as usize) {
        inputs.push(pack_le(chunk));
    }
    Ok(cur)
}

/// filecoin-hashers' SHA-256 `hash2_circuit` of two allocated numbers (and
/// `hash_multi_leaf_circuit` of two leaves): each number's bits (255, a constant zero to a
/// whole byte, bytes' bits reversed), the hash, its low 254 bits packed. Returns the packed
/// hash.
pub(crate) fn sha256_hash2(
    a: Scalar,
    b: Scalar,
    aux: &mut impl Sink,
) -> Result<Scalar, NativeError> {
    let mut preimage = reverse_bit_numbering(num_to_bits_le(a, aux));
    preimage.extend(reverse_bit_numbering(num_to_bits_le(b, aux)));
    let digest = sha256(&preimage, aux)?;
    let packed = pack_digest(digest.bytes());
    aux.push(packed);
    Ok(packed)
}
