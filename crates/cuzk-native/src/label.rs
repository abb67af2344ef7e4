//! A PoRep label as storage-proofs-porep 19.1's `create_label_circuit` computes it: the
//! replica id, layer index, node and parents laid out in 32-byte slots, hashed, and the
//! digest's first 254 bits (in byte-reversed order) packed into one allocated number.

use crate::{sha256, Bit, NativeError, Sink};
use cuzk_field::Scalar;
use ff::PrimeField;

/// The parents a label hashes (`TOTAL_PARENTS`: 6 DRG and 8 expander parents, repeated).
pub const LABEL_PARENTS: usize = 37;

/// Bits of one slot of the hashed buffer.
const SLOT: usize = 256;

/// `create_label_circuit`: appends to `aux` what it allocates (the hash's variables, then
/// the packed label) and returns the label.
///
/// `layer_index` and `node` are the `UInt32`'s and `UInt64`'s big-endian bits
/// (`into_bits_be`, `to_bits_be`); each parent and the replica id are Booleans as the
/// circuit receives them, at most 256 bits each (the replica id at least 32).
pub fn create_label(
    replica_id: &[Bit],
    parents: &[&[Bit]],
    layer_index: &[Bit; 32],
    node: &[Bit; 64],
    aux: &mut impl Sink,
) -> Result<Scalar, NativeError> {
    if !(32..=SLOT).contains(&replica_id.len()) {
        return Err(NativeError::ReplicaId {
            bits: replica_id.len(),
        });
    }
    if parents.len() != LABEL_PARENTS {
        return Err(NativeError::Parents {
            count: parents.len(),
        });
    }
    if let Some((index, p)) = parents
        .iter()
        .enumerate()
        .find(|(_, p)| !(1..=SLOT).contains(&p.len()))
    {
        return Err(NativeError::Parent {
            index,
            bits: p.len(),
        });
    }
    // Slots padded with constant zeros: replica id | layer index, node | each parent.
    let mut buffer = Vec::with_capacity((2 + LABEL_PARENTS) * SLOT);
    buffer.extend_from_slice(replica_id);
    buffer.resize(SLOT, Bit::Constant(false));
    buffer.extend_from_slice(layer_index);
    buffer.extend_from_slice(node);
    buffer.resize(2 * SLOT, Bit::Constant(false));
    for p in parents {
        buffer.extend_from_slice(p);
        buffer.resize(buffer.len().next_multiple_of(SLOT), Bit::Constant(false));
    }
    let digest = sha256(&buffer, aux)?;
    // Bits reversed within each byte read the digest as a little-endian number; `pack_bits`
    // takes its low CAPACITY (254) bits.
    let mut repr = digest.bytes();
    repr[31] &= 0x3f;
    let label = Option::from(Scalar::from_repr(repr)).expect("254 bits are below the modulus");
    aux.push(label);
    Ok(label)
}
