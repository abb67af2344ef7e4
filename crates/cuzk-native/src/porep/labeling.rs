//! A challenge's labeling proofs, natively: the challenge's `UInt64`, then per layer the
//! parents' bits and `create_label_circuit` (storage-proofs-porep 19.1's `Proof::synthesize`,
//! "labeling_{layer}").

use super::bits::{num_to_bits_le, reverse_bit_numbering, scalar};
use super::PorepError;
use crate::Sink;
use crate::{create_label, Bit, LABEL_PARENTS};
use cuzk_field::Scalar;

/// `UInt64::alloc` and `pack_into_input` of the challenge: its 64 bits (least significant
/// first) as aux, the number as an input. Returns the bits as `to_bits_be` gives them.
pub(crate) fn challenge_num(
    challenge: u64,
    aux: &mut impl Sink,
    inputs: &mut Vec<Scalar>,
) -> [Bit; 64] {
    let le: [bool; 64] = std::array::from_fn(|i| (challenge >> i) & 1 == 1);
    aux.extend(le.iter().map(|&b| scalar(b)));
    inputs.push(Scalar::from(challenge));
    std::array::from_fn(|i| Bit::Is(le[63 - i]))
}

/// The labels of every layer, 1 to `layers`: for each, the DRG parents' rows (`drg[p][layer −
/// 1]`) decomposed, then above layer 1 the expander parents' (`exp[p][layer − 2]`: they have
/// no first-layer row), the 37 parents repeated from those, and the label. Returns the
/// labels.
pub(crate) fn labels(
    replica_id: &[Bit],
    drg: &[Vec<Scalar>],
    exp: &[Vec<Scalar>],
    node: &[Bit; 64],
    layers: usize,
    aux: &mut impl Sink,
) -> Result<Vec<Scalar>, PorepError> {
    let mut labels = Vec::with_capacity(layers);
    for layer in 1..=layers {
        let mut parents: Vec<Vec<Bit>> = Vec::with_capacity(drg.len() + exp.len());
        for rows in drg {
            let bits = num_to_bits_le(rows[layer - 1], aux);
            parents.push(reverse_bit_numbering(bits));
        }
        if layer > 1 {
            for rows in exp {
                let bits = num_to_bits_le(rows[layer - 2], aux);
                parents.push(reverse_bit_numbering(bits));
            }
        }
        let expanded = expand(&parents, layer)?;
        let layer_index: [Bit; 32] =
            std::array::from_fn(|i| Bit::Constant((layer as u32 >> (31 - i)) & 1 == 1));
        labels.push(create_label(
            replica_id,
            &expanded,
            &layer_index,
            node,
            aux,
        )?);
    }
    Ok(labels)
}

/// The circuit's repetition of a layer's parents to `LABEL_PARENTS`: above layer 1 the 14
/// twice then the first 9; in layer 1 the 6 DRG parents six times then the first.
fn expand(parents: &[Vec<Bit>], layer: usize) -> Result<Vec<&[Bit]>, PorepError> {
    let p: Vec<&[Bit]> = parents.iter().map(Vec::as_slice).collect();
    let expanded: Vec<&[Bit]> = if layer > 1 {
        let head = p.get(..9).ok_or(PorepError::Parents { count: p.len() })?;
        [p.as_slice(), p.as_slice(), head].concat()
    } else {
        let first = *p.first().ok_or(PorepError::Parents { count: 0 })?;
        let mut e = p.repeat(6);
        e.push(first);
        e
    };
    if expanded.len() != LABEL_PARENTS {
        return Err(PorepError::Parents { count: p.len() });
    }
    Ok(expanded)
}
