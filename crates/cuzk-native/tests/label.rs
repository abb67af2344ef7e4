//! The native PoRep label against storage-proofs-porep 19.1's `create_label_circuit`: the
//! same aux values in the same order and the same label.

use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{ConstraintSystem, Index};
use bellperson::gadgets::uint32::UInt32;
use cuzk_field::Scalar;
use cuzk_native::{create_label, Bit, NativeError, LABEL_PARENTS};
use cuzk_synth::WitnessCs;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_porep::stacked::{create_label_circuit, TOTAL_PARENTS};

/// A field element's allocated bits as storage-proofs hands them to the label: 255 bits and
/// a constant zero, little-endian, reversed within each byte.
fn element_bits(rng: &mut ChaCha8Rng) -> Vec<Bit> {
    let mut le: Vec<Bit> = (0..255).map(|_| Bit::Is(rng.gen())).collect();
    le.push(Bit::Constant(false));
    le.chunks(8).flat_map(|c| c.iter().rev().copied()).collect()
}

/// Any bits: `len` of them, each a constant, a variable or a negated one.
fn any_bits(rng: &mut ChaCha8Rng, len: usize) -> Vec<Bit> {
    (0..len)
        .map(|_| {
            let v = rng.gen();
            match rng.gen_range(0..3) {
                0 => Bit::Constant(v),
                1 => Bit::Is(v),
                _ => Bit::Not(v),
            }
        })
        .collect()
}

/// The bits as the gadget's Booleans, their variables allocated in `cs`.
fn booleans(cs: &mut WitnessCs, bits: &[Bit]) -> Vec<Boolean> {
    bits.iter()
        .map(|&b| {
            let mut alloc = |v| AllocatedBit::alloc(cs.namespace(|| "bit"), Some(v)).unwrap();
            match b {
                Bit::Constant(v) => Boolean::Constant(v),
                Bit::Is(v) => Boolean::Is(alloc(v)),
                Bit::Not(v) => Boolean::Is(alloc(!v)).not(),
            }
        })
        .collect()
}

/// The form of a generic bit.
fn form(b: &Boolean) -> Bit {
    match b {
        Boolean::Constant(v) => Bit::Constant(*v),
        Boolean::Is(a) => Bit::Is(a.get_value().unwrap()),
        Boolean::Not(a) => Bit::Not(!a.get_value().unwrap()),
    }
}

/// Runs both on one random label and compares. `wild`: parents and replica id of any
/// length and forms; else Filecoin's (14 parents, repeated as a layer above the first).
fn agree(seed: u64, wild: bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let replica_id = if wild {
        let len = rng.gen_range(32..=256);
        any_bits(&mut rng, len)
    } else {
        element_bits(&mut rng)
    };
    let distinct: Vec<Vec<Bit>> = (0..14)
        .map(|_| {
            if wild {
                let len = rng.gen_range(1..=256);
                any_bits(&mut rng, len)
            } else {
                element_bits(&mut rng)
            }
        })
        .collect();
    let expanded: Vec<&Vec<Bit>> = distinct
        .iter()
        .chain(&distinct)
        .chain(&distinct[..9])
        .collect();
    assert_eq!(expanded.len(), TOTAL_PARENTS);

    let mut cs = WitnessCs::with_one();
    let generic_id = booleans(&mut cs, &replica_id);
    let generic_parents: Vec<Vec<Boolean>> =
        expanded.iter().map(|p| booleans(&mut cs, p)).collect();
    let node_value: u64 = rng.gen();
    let node = if wild && rng.gen() {
        UInt64::constant(node_value)
    } else {
        UInt64::alloc(cs.namespace(|| "node"), Some(node_value)).unwrap()
    };
    let layer_value: u32 = rng.gen_range(1..12);
    let layer = if wild && rng.gen() {
        UInt32::alloc(cs.namespace(|| "layer"), Some(layer_value)).unwrap()
    } else {
        UInt32::constant(layer_value)
    };
    let node_bits: [Bit; 64] = std::array::from_fn(|i| form(&node.to_bits_be()[i]));
    let layer_bits: [Bit; 32] = std::array::from_fn(|i| form(&layer.clone().into_bits_be()[i]));
    let mut aux = cs.aux_slice().to_vec();

    let num = create_label_circuit(
        cs.namespace(|| "label"),
        &generic_id,
        generic_parents,
        layer,
        node,
    )
    .unwrap();
    let parents: Vec<&[Bit]> = expanded.iter().map(|p| p.as_slice()).collect();
    let label = create_label(&replica_id, &parents, &layer_bits, &node_bits, &mut aux).unwrap();

    let generic_aux = cs.into_witness().aux;
    assert_eq!(aux.len(), generic_aux.len(), "seed {seed}: aux variables");
    if let Some(i) = (0..aux.len()).find(|&i| aux[i] != generic_aux[i]) {
        panic!("seed {seed}: aux {i} of {} differs", aux.len());
    }
    assert_eq!(Some(label), num.get_value());
    assert_eq!(
        num.get_variable().get_unchecked(),
        Index::Aux(aux.len() - 1)
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn native_label_is_the_circuits(seed in any::<u64>(), wild in any::<bool>()) {
        agree(seed, wild);
    }
}

#[test]
fn filecoin_shaped_and_wild_labels() {
    for seed in 0..3 {
        agree(seed, false);
        agree(seed + 100, true);
    }
}

#[test]
fn inputs_the_circuit_refuses_are_errors() {
    let parent = [Bit::Is(true); 256];
    let parents = [&parent[..]; LABEL_PARENTS];
    let mut aux: Vec<Scalar> = Vec::new();
    let layer = [Bit::Constant(false); 32];
    let node = [Bit::Is(false); 64];
    let id = [Bit::Is(true); 256];
    for bits in [31, 257] {
        let id = vec![Bit::Is(true); bits];
        let r = create_label(&id, &parents, &layer, &node, &mut aux);
        assert_eq!(r, Err(NativeError::ReplicaId { bits }));
    }
    let r = create_label(&id, &parents[1..], &layer, &node, &mut aux);
    assert_eq!(r, Err(NativeError::Parents { count: 36 }));
    let long = [Bit::Is(true); 257];
    let mut bad = parents;
    bad[5] = &long;
    let r = create_label(&id, &bad, &layer, &node, &mut aux);
    assert_eq!(
        r,
        Err(NativeError::Parent {
            index: 5,
            bits: 257
        })
    );
    bad[5] = &[];
    let r = create_label(&id, &bad, &layer, &node, &mut aux);
    assert_eq!(r, Err(NativeError::Parent { index: 5, bits: 0 }));
    assert!(aux.is_empty());
}
