//! The SHA-256 preimage circuit: satisfied, public inputs as the circuit computes them,
//! constraint counts as documented.

use cuzk_circuits::Sha256Preimage;
use cuzk_synth::{check_satisfied, synthesize_full, synthesize_witness, Pce};
use proptest::prelude::*;

#[test]
fn satisfied_with_native_public_inputs() {
    for len in [0, 1, 55, 56, 64, 100] {
        let circuit = Sha256Preimage::new((0..len as u8).map(|b| b.wrapping_mul(37)).collect());
        check_satisfied(circuit.clone()).unwrap();
        let w = synthesize_witness(circuit.clone()).unwrap();
        assert_eq!(
            w.inputs[1..],
            circuit.public_inputs()[..],
            "preimage of {len} bytes"
        );
        assert_eq!(w.inputs.len(), 3);
    }
}

#[test]
fn pce_path_matches_reference() {
    let circuit = Sha256Preimage::new(b"abc".to_vec());
    let full = synthesize_full(circuit.clone()).unwrap();
    let pce = Pce::record(circuit.clone()).unwrap();
    let w = synthesize_witness(circuit).unwrap();
    assert_eq!(w, full.witness);
    assert_eq!(pce.evaluate(&w).unwrap(), full.eval);
    assert_eq!(pce.density(), full.density);
}

#[test]
fn documented_counts_hold() {
    let count = |len: usize| {
        Pce::record(Sha256Preimage::new(vec![7; len]))
            .unwrap()
            .num_constraints
    };
    assert_eq!(
        count(128) - count(64),
        Sha256Preimage::CONSTRAINTS_PER_BLOCK
    );
    for (len, expected) in [
        (1, 24_380),
        (55, 26_031),
        (64, 45_388),
        (119, 52_735),
        (128, 72_092),
    ] {
        assert_eq!(count(len), expected, "preimage of {len} bytes");
        assert_eq!(Sha256Preimage::constraint_count(len), expected);
    }
}

#[test]
fn approx_constraints_picks_the_closest_length() {
    for n in [0, 10_000, 40_000, 1 << 16, 200_000] {
        let circuit = Sha256Preimage::with_approx_constraints(n, 5);
        let len = circuit.preimage().len();
        let got = Sha256Preimage::constraint_count(len);
        let dist = |c: usize| c.abs_diff(n);
        assert!(
            dist(got) <= dist(Sha256Preimage::constraint_count(len + 1)),
            "n = {n}"
        );
        if len > 0 {
            assert!(
                dist(got) <= dist(Sha256Preimage::constraint_count(len - 1)),
                "n = {n}"
            );
        }
    }
    let near = Sha256Preimage::with_approx_constraints(1 << 16, 1);
    // 2^16 falls in the jump from 119 bytes (52,735) to 120 bytes (71,798).
    assert_eq!(near.preimage().len(), 120);
    let smooth = Sha256Preimage::with_approx_constraints(98_650, 1);
    assert_eq!(
        Sha256Preimage::constraint_count(smooth.preimage().len()),
        98_649
    );
    assert_eq!(near, Sha256Preimage::with_approx_constraints(1 << 16, 1));
    assert_ne!(near, Sha256Preimage::with_approx_constraints(1 << 16, 2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    #[test]
    fn constraint_count_is_exact(len in 0usize..400) {
        let recorded = Pce::record(Sha256Preimage::new(vec![1; len])).unwrap().num_constraints;
        prop_assert_eq!(Sha256Preimage::constraint_count(len), recorded);
    }
}
