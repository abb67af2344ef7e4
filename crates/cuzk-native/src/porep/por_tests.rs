//! The native Poseidon tree level against the generic one: storage-proofs-core's `insert`
//! and filecoin-hashers' Poseidon gadget into `WitnessCs`, at every position of arities 2,
//! 4 and 8 (Filecoin's 32GiB trees use 8 only, 64GiB's top tree 2).

use super::comm_d::Level;
use super::por::sub_path;
use super::poseidon::poseidon;
use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::num::AllocatedNum;
use cuzk_field::Scalar;
use cuzk_synth::WitnessCs;
use ff::Field;
use filecoin_hashers::poseidon::PoseidonFunction;
use filecoin_hashers::{HashFunction, PoseidonArity};
use storage_proofs_core::gadgets::insertion::insert;
use typenum::{U11, U2, U4, U8};

/// The generic level: `cur`, the index bits, the siblings, `insert`, the hash.
fn generic<A: 'static + PoseidonArity>(cur: Scalar, index: usize, sibs: &[Scalar]) -> Vec<Scalar> {
    let mut cs = WitnessCs::with_one();
    let cur = AllocatedNum::alloc(&mut cs, || Ok(cur)).unwrap();
    let bits: Vec<Boolean> = (0..A::to_usize().trailing_zeros())
        .map(|j| Boolean::from(AllocatedBit::alloc(&mut cs, Some((index >> j) & 1 == 1)).unwrap()))
        .collect();
    let sibs: Vec<AllocatedNum<Scalar>> = sibs
        .iter()
        .map(|&s| AllocatedNum::alloc(&mut cs, || Ok(s)).unwrap())
        .collect();
    let children = insert(&mut cs, &cur, &bits, &sibs).unwrap();
    PoseidonFunction::hash_multi_leaf_circuit::<A, _>(&mut cs, &children, 0).unwrap();
    cs.into_witness().aux
}

fn level_agrees<A: 'static + PoseidonArity>() {
    let mut rng = rand::thread_rng();
    let arity = A::to_usize();
    for index in 0..arity {
        let cur = Scalar::random(&mut rng);
        let sibs: Vec<Scalar> = (1..arity).map(|_| Scalar::random(&mut rng)).collect();
        let mut aux = vec![cur];
        let level: Level = (sibs.iter().copied().map(Some).collect(), Some(index));
        let mut bits = Vec::new();
        sub_path::<A>(cur, &[level], 0, &mut bits, &mut aux).unwrap();
        assert_eq!(
            aux,
            generic::<A>(cur, index, &sibs),
            "arity {arity}, position {index}"
        );
    }
}

#[test]
fn a_native_poseidon_tree_level_is_the_generic_one() {
    level_agrees::<U2>();
    level_agrees::<U4>();
    level_agrees::<U8>();
}

#[test]
fn the_native_column_hashes_are_the_generic_ones() {
    let mut rng = rand::thread_rng();
    for rows in [2, 11] {
        let column: Vec<Scalar> = (0..rows).map(|_| Scalar::random(&mut rng)).collect();
        let mut cs = WitnessCs::with_one();
        let nums: Vec<AllocatedNum<Scalar>> = column
            .iter()
            .map(|&v| AllocatedNum::alloc(&mut cs, || Ok(v)).unwrap())
            .collect();
        let hash = if rows == 2 {
            PoseidonFunction::hash_multi_leaf_circuit::<U2, _>(&mut cs, &nums, 0)
        } else {
            PoseidonFunction::hash_multi_leaf_circuit::<U11, _>(&mut cs, &nums, 0)
        }
        .unwrap();
        let mut aux = column.clone();
        let native = if rows == 2 {
            poseidon::<U2>(&column, &mut aux)
        } else {
            poseidon::<U11>(&column, &mut aux)
        };
        assert_eq!(aux, cs.into_witness().aux, "{rows} rows");
        assert_eq!(Some(native), hash.get_value());
    }
}
