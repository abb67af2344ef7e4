//! neptune 11's `poseidon_hash` circuit (which filecoin-hashers' Poseidon gadgets run),
//! natively: the values it allocates, in its order, with its optimized constants.
//!
//! The state is the domain tag then the preimage (already allocated). The first full round
//! adds a round key before and after each S-box; the tag's S-box is a constant. After that
//! every state element is a linear combination (the MDS product, never allocated by itself),
//! so each S-box first allocates its input, then its square, fourth power and fifth power
//! plus the round key: 3 values per S-box in the first round (no input), 4 after. Partial
//! rounds take the first element only; the MDS is the full matrix, then the pre-sparse one
//! at the last initial full round, then the sparse ones through the partial rounds. Last, the
//! hash (state element 1) is allocated.

use crate::Sink;
use cuzk_field::Scalar;
use ff::Field;
use filecoin_hashers::PoseidonArity;
use neptune::poseidon::{Arity, PoseidonConstants};

/// Appends the circuit's values for hashing `preimage` (its arity, `A`) with
/// filecoin-hashers' constants of that arity and returns the hash.
pub(crate) fn poseidon<A: PoseidonArity>(preimage: &[Scalar], aux: &mut impl Sink) -> Scalar {
    poseidon_with(A::PARAMETERS(), preimage, aux)
}

/// Appends the circuit's values for hashing `preimage` with the constants `c` (any hash type:
/// the legacy circuit pads nothing, so a preimage is always of the arity) and returns the hash.
pub(crate) fn poseidon_with<A: Arity<Scalar>>(
    c: &PoseidonConstants<Scalar, A>,
    preimage: &[Scalar],
    aux: &mut impl Sink,
) -> Scalar {
    let width = c.width();
    assert_eq!(preimage.len() + 1, width, "a preimage of the arity");
    let keys = &c.compressed_round_constants;
    let sparse_offset = c.half_full_rounds - 1;
    // `product_mds` of round `r`, values only (the constants' type is neptune's, unnamed here).
    let mds = |state: &mut Vec<Scalar>, r: usize| {
        let dense = |m: &[Vec<Scalar>], state: &mut Vec<Scalar>| {
            let out: Vec<Scalar> = (0..state.len())
                .map(|j| state.iter().zip(m).map(|(s, row)| *s * row[j]).sum())
                .collect();
            *state = out;
        };
        if r == sparse_offset {
            dense(&c.pre_sparse_matrix, state);
        } else if r > sparse_offset && r < c.half_full_rounds + c.partial_rounds {
            let m = &c.sparse_matrixes[r - sparse_offset - 1];
            let first = state[0];
            let w0: Scalar = state.iter().zip(&m.w_hat).map(|(s, w)| *s * w).sum();
            for (s, v) in state.iter_mut().skip(1).zip(&m.v_rest) {
                *s += first * v;
            }
            state[0] = w0;
        } else {
            dense(&c.mds_matrices.m, state);
        }
    };

    let mut state = Vec::with_capacity(width);
    state.push(c.domain_tag);
    state.extend_from_slice(preimage);
    let mut round = 0;
    // First full round: keys before and after each S-box; the preimage is allocated already
    // and the tag's S-box is a constant.
    let (pre, post) = keys[..2 * width].split_at(width);
    let mut offset = 2 * width;
    for (i, s) in state.iter_mut().enumerate() {
        let l = *s + pre[i];
        let l2 = l.square();
        let l4 = l2.square();
        *s = l4 * l + post[i];
        if i > 0 {
            aux.extend([l2, l4, *s]);
        }
    }
    mds(&mut state, round);
    round += 1;
    let rounds = c.half_full_rounds - 1 + c.partial_rounds + c.half_full_rounds;
    while round < rounds + 1 {
        let partial = round >= c.half_full_rounds && round < c.half_full_rounds + c.partial_rounds;
        // The terminal full round adds no key.
        let keyed = round < rounds;
        let n = if partial { 1 } else { width };
        for s in &mut state[..n] {
            let key = keyed.then(|| {
                offset += 1;
                keys[offset - 1]
            });
            *s = s_box(*s, key, aux);
        }
        mds(&mut state, round);
        round += 1;
    }
    aux.push(state[1]);
    state[1]
}

/// `quintic_s_box` of a linear combination: its value allocated, squared, to the fourth,
/// then the fifth power plus the key.
fn s_box(l: Scalar, key: Option<Scalar>, aux: &mut impl Sink) -> Scalar {
    let l2 = l.square();
    let l4 = l2.square();
    let mut l5 = l4 * l;
    if let Some(k) = key {
        l5 += k;
    }
    aux.extend([l, l2, l4, l5]);
    l5
}
