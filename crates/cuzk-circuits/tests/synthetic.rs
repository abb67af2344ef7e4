//! The synthetic PoRep-shaped circuit: satisfied, and its pinned shape and value
//! distribution hold.

use cuzk_circuits::SyntheticPoRep;
use cuzk_field::Scalar;
use cuzk_synth::{check_satisfied, synthesize_full, synthesize_witness, Pce};
use ff::Field;

#[test]
fn satisfied_at_small_sizes() {
    for n in [0, 1, 2, 3, 4, 5, 1000] {
        let circuit = SyntheticPoRep::new(n, 11);
        check_satisfied(circuit).unwrap();
        let pce = Pce::record(circuit).unwrap();
        let w = synthesize_witness(circuit).unwrap();
        pce.check_witness(&w).unwrap();
        assert_eq!(w.inputs[1..], circuit.public_inputs()[..]);
    }
}

#[test]
fn witness_generator_path_matches_reference() {
    // Spans several value chunks, so chunked generation is exercised.
    let circuit = SyntheticPoRep::new(40_000, 3);
    let full = synthesize_full(circuit).unwrap();
    let pce = Pce::record(circuit).unwrap();
    let w = synthesize_witness(circuit).unwrap();
    assert_eq!(w, full.witness);
    assert_eq!(w.aux, circuit.aux_values());
    assert_eq!(pce.evaluate(&w).unwrap(), full.eval);
    assert_eq!(pce.density(), full.density);
}

#[test]
fn shape_is_pinned() {
    let n = 1 << 16;
    let pce = Pce::record(SyntheticPoRep::new(n, 1)).unwrap();
    assert_eq!(
        (pce.num_constraints, pce.num_inputs, pce.num_aux),
        (n, 2, n)
    );
    assert!(pce.num_aux * 100 >= 95 * n);
    let d = pce.density();
    assert_eq!(d.a_aux.count_ones(), n, "every aux is in A");
    assert_eq!(d.b_aux.count_ones(), n / 4, "a quarter of the aux are in B");
    assert_eq!(d.b_input.iter_ones().collect::<Vec<_>>(), vec![0]);
    // The public input: once in A and C of its constraint, once in its input row.
    assert_eq!(pce.a.cols.iter().filter(|&&c| c == 1).count(), 2);
    assert_eq!(pce.c.cols.iter().filter(|&&c| c == 1).count(), 1);
    // The shape does not depend on the seed.
    assert_eq!(Pce::record(SyntheticPoRep::new(n, 2)).unwrap(), pce);
}

#[test]
fn values_are_distributed_as_pinned() {
    let n = 1 << 18;
    let aux = SyntheticPoRep::new(n, 9).aux_values();
    let zeros = aux.iter().filter(|x| **x == Scalar::ZERO).count();
    let ones = aux.iter().filter(|x| **x == Scalar::ONE).count();
    let random = n - zeros - ones;
    // 1% random: expected 2621, standard deviation about 51.
    assert!((2300..2950).contains(&random), "{random} random values");
    // Half of the rest each: standard deviation about 256.
    assert!(zeros.abs_diff(ones) < 2_000, "{zeros} zeros, {ones} ones");
    // Boolean positions never hold random values.
    assert!(aux
        .iter()
        .step_by(4)
        .all(|x| *x == Scalar::ZERO || *x == Scalar::ONE));
    // Values come from the seed.
    assert_eq!(SyntheticPoRep::new(n, 9).aux_values(), aux);
    assert_ne!(SyntheticPoRep::new(n, 10).aux_values(), aux);
    assert_ne!(
        SyntheticPoRep::new(n, 10).public_inputs(),
        SyntheticPoRep::new(n, 9).public_inputs()
    );
}

#[test]
fn direct_pce_equals_the_recorded_one() {
    for n in [0, 1, 2, 3, 4, 5, 9, 1000, 40_000] {
        let circuit = SyntheticPoRep::new(n, 5);
        let direct = circuit.pce();
        direct.validate().unwrap();
        assert_eq!(direct, Pce::record(circuit).unwrap(), "{n} constraints");
    }
}
