//! The native SHA-256 witness against bellpepper's gadget: the same aux values in the same
//! order, the same output bits, the standard digest, and a witness the gadget's constraints
//! accept.

mod common;

use bellpepper_core::test_cs::TestConstraintSystem;
use common::{assert_same_output, bytes_of, flipped, generic, native, random_input, Replayed};
use cuzk_field::Scalar;
use cuzk_native::{Bit, NativeError};
use cuzk_synth::{check_satisfied, WitnessCs};
use proptest::prelude::*;
use sha2::{Digest as _, Sha256};

/// Runs both on `input` and checks aux, output and digest.
fn agree(input: &[Bit], block: bool) {
    let mut cs = WitnessCs::with_one();
    let out = generic(&mut cs, input, block);
    let (aux, digest) = native(input, block);
    let witness = cs.into_witness();
    assert_eq!(aux.len(), witness.aux.len(), "number of aux variables");
    if let Some(i) = (0..aux.len()).find(|&i| aux[i] != witness.aux[i]) {
        panic!("aux {i} of {} differs", aux.len());
    }
    assert_same_output(&out, &digest);
    if !block {
        let expected: [u8; 32] = Sha256::digest(bytes_of(input)).into();
        assert_eq!(digest.bytes(), expected);
    }
}

/// Byte lengths around the padding's edges (55 bytes is the most one block holds), whole
/// blocks, and a PoRep label's input (39 × 32 bytes).
const LENGTHS: [usize; 12] = [0, 1, 55, 56, 63, 64, 119, 125, 128, 192, 256, 1248];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn native_aux_is_the_gadgets(
        seed in any::<u64>(),
        length in prop_oneof![proptest::sample::select(&LENGTHS[..]), 0usize..200],
        mode in 0u8..4,
    ) {
        agree(&random_input(seed, length, mode), false);
    }

    #[test]
    fn native_block_is_the_gadgets(seed in any::<u64>(), mode in 0u8..4) {
        agree(&random_input(seed, 64, mode), true);
    }
}

#[test]
fn every_length_and_form_at_the_padding_edges() {
    for (k, &length) in LENGTHS.iter().enumerate() {
        for mode in 0..4 {
            agree(
                &random_input(k as u64 * 4 + u64::from(mode), length, mode),
                false,
            );
        }
    }
}

#[test]
fn the_gadget_counts_and_accepts_the_same_variables() {
    for (seed, length, mode) in [(1, 0, 0), (2, 55, 2), (3, 64, 3), (4, 100, 0), (5, 20, 1)] {
        let input = random_input(seed, length, mode);
        let mut cs = TestConstraintSystem::<Scalar>::new();
        generic(&mut cs, &input, false);
        assert!(cs.is_satisfied(), "{:?}", cs.which_is_unsatisfied());
        let (aux, _) = native(&input, false);
        assert_eq!(cs.scalar_aux(), aux, "{length} bytes, mode {mode}");
        // Replayed: the gadget's constraints with the native values in its variables.
        check_satisfied(Replayed {
            input: &input,
            aux: &aux,
            block: false,
        })
        .expect("the native witness satisfies the gadget");
    }
}

#[test]
fn a_wrong_value_breaks_a_constraint() {
    let input = random_input(7, 40, 3);
    let (mut aux, _) = native(&input, false);
    let inputs = input.iter().filter(|b| !b.is_constant()).count();
    for at in [inputs, inputs + 1000, aux.len() - 1] {
        aux[at] = flipped(aux[at]);
        let replayed = Replayed {
            input: &input,
            aux: &aux,
            block: false,
        };
        assert!(check_satisfied(replayed).is_err(), "aux {at} flipped");
        aux[at] = flipped(aux[at]);
    }
}

#[test]
fn an_all_constant_input_allocates_nothing() {
    let input = random_input(9, 100, 1);
    let (aux, digest) = native(&input, false);
    assert!(aux.is_empty());
    assert!((0..256).all(|i| digest.bit(i).is_constant() && digest.aux_index(i).is_none()));
}

#[test]
fn lengths_the_gadget_refuses_are_errors() {
    let mut aux = Vec::new();
    for bits in [1, 447, 1001] {
        let input = vec![Bit::Is(true); bits];
        assert_eq!(
            cuzk_native::sha256(&input, &mut aux),
            Err(NativeError::NotBytes { bits })
        );
    }
    for bits in [0, 448, 511, 513, 1024] {
        let input = vec![Bit::Is(false); bits];
        assert_eq!(
            cuzk_native::sha256_block_no_padding(&input, &mut aux),
            Err(NativeError::NotOneBlock { bits })
        );
    }
    assert!(aux.is_empty());
}
