//! A Poseidon tree's inclusion proof, natively: storage-proofs-core's `PoRCircuit` with the
//! leaf and the root already allocated and the root private (the circuit's
//! `enforce_inclusion`), for the base, sub and top arities of the tree.
//!
//! Per level: the index bits (log2 of the arity, least significant first), the siblings,
//! `insert`'s picks (and, for arity 8, the `nor` and `and` of the two low bits first), then
//! the Poseidon hash of the inserted children. After the three paths: the index bits packed
//! into inputs.

use super::bits::{pack_le, scalar};
use super::comm_d::Level;
use super::poseidon::poseidon;
use super::PorepError;
use crate::Sink;
use cuzk_field::Scalar;
use ff::PrimeField;
use filecoin_hashers::PoseidonArity;
use storage_proofs_core::merkle::MerkleProofTrait;
use typenum::Unsigned;

/// Appends what `PoRCircuit::synthesize` allocates for `path` (a `P`'s `as_options`) from
/// `leaf`, its inputs too, and returns the root it computes.
pub(crate) fn inclusion<P: MerkleProofTrait>(
    leaf: Scalar,
    path: &[Level],
    aux: &mut impl Sink,
    inputs: &mut Vec<Scalar>,
) -> Result<Scalar, PorepError> {
    // `AuthPath::from`: the last level is the top tree's, the one before the sub tree's.
    let extra = match (P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize()) {
        (_, t) if t > 0 => 2,
        (s, _) if s > 0 => 1,
        _ => 0,
    };
    let split = path
        .len()
        .checked_sub(extra)
        .ok_or(PorepError::Path { level: 0 })?;
    let (base, rest) = path.split_at(split);
    // A top tree comes with a sub tree (`AuthPath::from` asserts it).
    let (sub, top) = rest.split_at(extra.min(1));
    let mut bits = Vec::new();
    let cur = sub_path::<P::Arity>(leaf, base, 0, &mut bits, aux)?;
    let cur = sub_path::<P::SubTreeArity>(cur, sub, base.len(), &mut bits, aux)?;
    let root = sub_path::<P::TopTreeArity>(cur, top, base.len() + sub.len(), &mut bits, aux)?;
    for chunk in bits.chunks(Scalar::CAPACITY as usize) {
        inputs.push(pack_le(chunk));
    }
    Ok(root)
}

/// One of the three paths, of arity `A` (none for 0); `first` numbers its levels in errors.
pub(super) fn sub_path<A: 'static + PoseidonArity>(
    mut cur: Scalar,
    levels: &[Level],
    first: usize,
    bits: &mut Vec<bool>,
    aux: &mut impl Sink,
) -> Result<Scalar, PorepError> {
    let arity = A::to_usize();
    if arity == 0 {
        return Ok(cur);
    }
    let index_bits = arity.trailing_zeros() as usize;
    for (i, (siblings, index)) in levels.iter().enumerate() {
        let level = first + i;
        let index = index.ok_or(PorepError::Path { level })?;
        if siblings.len() + 1 != arity {
            return Err(PorepError::Path { level });
        }
        let b: Vec<bool> = (0..index_bits).map(|j| (index >> j) & 1 == 1).collect();
        aux.extend(b.iter().map(|&x| scalar(x)));
        bits.extend_from_slice(&b);
        let sibs = siblings
            .iter()
            .map(|s| s.ok_or(PorepError::Path { level }))
            .collect::<Result<Vec<Scalar>, PorepError>>()?;
        aux.extend(sibs.iter().copied());
        let children = insert(cur, &b, &sibs, aux).ok_or(PorepError::Arity { arity })?;
        cur = poseidon::<A>(&children, aux);
    }
    Ok(cur)
}

/// `insertion::insert` of `a` among `s` at the position `b` encodes (least significant bit
/// first): appends its `pick`s and returns the children. `None` for an arity the hand-written
/// cases (2, 4, 8) do not cover.
pub(crate) fn insert(
    a: Scalar,
    b: &[bool],
    s: &[Scalar],
    aux: &mut impl Sink,
) -> Option<Vec<Scalar>> {
    // Arity 8 allocates the `nor` and the `and` of the two low bits before its picks.
    if let ([b0, b1, _], 7) = (b, s.len()) {
        aux.extend([scalar(!b0 && !b1), scalar(*b0 && *b1)]);
    }
    let mut pick = |c: bool, x: Scalar, y: Scalar| {
        let v = if c { x } else { y };
        aux.push(v);
        v
    };
    Some(match (b, s) {
        ([b0], [e]) => vec![pick(*b0, *e, a), pick(*b0, a, *e)],
        ([b0, b1], [b, c, d]) => {
            let (b0, b1) = (*b0, *b1);
            let p0x = pick(b0, *b, a);
            let p0 = pick(b1, *b, p0x);
            let p1x = pick(b0, a, *b);
            let p1 = pick(b1, *c, p1x);
            let p2x = pick(b0, *d, a);
            let p2 = pick(b1, p2x, *c);
            let p3x = pick(b0, a, *d);
            let p3 = pick(b1, p3x, *d);
            vec![p0, p1, p2, p3]
        }
        ([b0, b1, b2], [b, c, d, e, f, g, h]) => {
            let (b0, b1, b2) = (*b0, *b1, *b2);
            let (nor, and) = (!b0 && !b1, b0 && b1);
            let p0x = pick(nor, a, *b);
            let p0 = pick(b2, *b, p0x);
            let p1x = pick(b0, a, *b);
            let p1xx = pick(b1, *c, p1x);
            let p1 = pick(b2, *c, p1xx);
            let p2x = pick(b0, *d, a);
            let p2xx = pick(b1, p2x, *c);
            let p2 = pick(b2, *d, p2xx);
            let p3x = pick(and, a, *d);
            let p3 = pick(b2, *e, p3x);
            let p4x = pick(nor, a, *f);
            let p4 = pick(b2, p4x, *e);
            let p5x = pick(b0, a, *f);
            let p5xx = pick(b1, *g, p5x);
            let p5 = pick(b2, p5xx, *f);
            let p6x = pick(b0, *h, a);
            let p6xx = pick(b1, p6x, *g);
            let p6 = pick(b2, p6xx, *g);
            let p7x = pick(and, a, *h);
            let p7 = pick(b2, p7x, *h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        _ => return None,
    })
}
