//! Random circuits: the PCE path agrees with the reference path, and broken circuits are
//! caught at the right constraint on both the checking system and the PCE.

use bellpepper_core::{Circuit, ConstraintSystem, Index, SynthesisError, Variable};
use cuzk_field::{FrRepr, Scalar};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{check_satisfied, synthesize_full, synthesize_witness, Pce, SynthError};
use ff::Field;
use proptest::prelude::*;

fn agree(circuit: &RandomCircuit) -> Result<(), TestCaseError> {
    let full = synthesize_full(circuit.clone()).unwrap();
    let pce = Pce::record(circuit.clone()).unwrap();
    pce.validate().unwrap();
    prop_assert_eq!(pce.num_constraints, circuit.num_constraints());
    prop_assert_eq!(pce.num_inputs, circuit.num_inputs());
    prop_assert_eq!(pce.num_aux, circuit.num_aux());

    let w = synthesize_witness(circuit.clone()).unwrap();
    prop_assert_eq!(&w, &full.witness);
    // Recorded and synthesized in one run: the same matrices and witness.
    let (pce_once, w_once) = Pce::record_with_witness(circuit.clone()).unwrap();
    prop_assert_eq!(&pce_once, &pce);
    prop_assert_eq!(&w_once, &w);
    prop_assert_eq!(&w.inputs[1..], circuit.public_inputs());
    prop_assert_eq!(&pce.synthesize_witness(circuit.clone()).unwrap(), &w);
    // In the memory of an earlier witness, larger or smaller, junk values included: the same.
    for spare_len in [0, w.aux.len() / 2, w.aux.len() * 3 + 5] {
        let spare = cuzk_synth::Witness {
            inputs: vec![Scalar::from(9); spare_len % 7],
            aux: vec![Scalar::from(7); spare_len],
            packed: None,
        };
        prop_assert_eq!(
            &pce.synthesize_witness_reusing(circuit.clone(), spare)
                .unwrap(),
            &w
        );
    }

    let eval = pce.evaluate(&w).unwrap();
    prop_assert_eq!(&eval, &full.eval);
    prop_assert_eq!(pce.density(), full.density);

    let rows = pce.num_rows();
    let (mut a, mut b, mut c) = (
        vec![Scalar::ONE; rows],
        vec![Scalar::ONE; rows],
        vec![Scalar::ONE; rows],
    );
    pce.evaluate_into(&w, &mut a, &mut b, &mut c).unwrap();
    prop_assert_eq!((a, b, c), (eval.a.clone(), eval.b.clone(), eval.c.clone()));

    // The device-layout path: same values, padding zeroed, satisfied.
    let padded = rows.next_power_of_two() + 1;
    let junk = FrRepr { limbs: [7; 4] };
    let (mut ra, mut rb, mut rc) = (vec![junk; padded], vec![junk; padded], vec![junk; padded]);
    pce.evaluate_checked_into(&w, &mut ra, &mut rb, &mut rc)
        .unwrap();
    let reprs = |v: &[Scalar]| -> Vec<FrRepr> {
        let mut out: Vec<FrRepr> = v.iter().map(|&x| x.into()).collect();
        out.resize(padded, FrRepr::default());
        out
    };
    prop_assert_eq!(ra, reprs(&eval.a));
    prop_assert_eq!(rb, reprs(&eval.b));
    prop_assert_eq!(rc, reprs(&eval.c));

    pce.check(&w, &eval).unwrap();
    check_satisfied(circuit.clone()).unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn pce_path_matches_reference(seed in any::<u64>(), size in 0usize..120) {
        agree(&RandomCircuit::new(seed, size))?;
    }

    #[test]
    fn first_failing_constraint_is_named(seed in any::<u64>(), size in 20usize..120, pick in any::<usize>()) {
        let mut circuit = RandomCircuit::new(seed, size);
        let breakable = circuit.breakable_constraints();
        prop_assume!(!breakable.is_empty());
        let k = breakable[pick % breakable.len()];
        prop_assert!(circuit.break_constraint(k));

        match check_satisfied(circuit.clone()) {
            Err(SynthError::Unsatisfied { index, name }) => {
                prop_assert_eq!(index, k);
                prop_assert_eq!(name.as_deref(), Some(circuit.constraint_name(k)));
            }
            other => prop_assert!(false, "expected Unsatisfied, got {:?}", other),
        }

        let pce = Pce::record(circuit.clone()).unwrap();
        let w = synthesize_witness(circuit.clone()).unwrap();
        match pce.check_witness(&w) {
            Err(SynthError::Unsatisfied { index, name: None }) => prop_assert_eq!(index, k),
            other => prop_assert!(false, "expected Unsatisfied, got {:?}", other),
        }
        let rows = pce.num_rows();
        let (mut ra, mut rb, mut rc) = (vec![FrRepr::default(); rows], vec![FrRepr::default(); rows], vec![FrRepr::default(); rows]);
        match pce.evaluate_checked_into(&w, &mut ra, &mut rb, &mut rc) {
            Err(SynthError::Unsatisfied { index, name: None }) => prop_assert_eq!(index, k),
            other => prop_assert!(false, "expected Unsatisfied, got {:?}", other),
        }
        // Broken or not, both paths still agree on every number.
        let full = synthesize_full(circuit.clone()).unwrap();
        prop_assert_eq!(pce.evaluate(&w).unwrap(), full.eval);
    }
}

#[test]
fn wrong_witness_shape_is_reported() {
    let circuit = RandomCircuit::new(7, 60);
    let pce = Pce::record(circuit.clone()).unwrap();
    let mut w = synthesize_witness(circuit).unwrap();
    w.aux.push(Scalar::ONE);
    match pce.evaluate(&w) {
        Err(SynthError::WitnessShape {
            expected_inputs,
            expected_aux,
            found_inputs,
            found_aux,
        }) => {
            assert_eq!(
                (expected_inputs, found_inputs),
                (pce.num_inputs, pce.num_inputs)
            );
            assert_eq!((expected_aux, found_aux), (pce.num_aux, pce.num_aux + 1));
        }
        other => panic!("expected WitnessShape, got {other:?}"),
    }
    w.aux.pop();
    let rows = pce.num_rows();
    let (mut a, mut b, mut c) = (
        vec![Scalar::ZERO; rows],
        vec![Scalar::ZERO; rows - 1],
        vec![Scalar::ZERO; rows],
    );
    assert!(matches!(
        pce.evaluate_into(&w, &mut a, &mut b, &mut c),
        Err(SynthError::EvaluationShape { expected, b: found, .. }) if expected == rows && found == rows - 1
    ));
}

/// x·x = x for a boolean x, with a zero-coefficient term and ONE in B.
#[derive(Clone)]
struct Tiny {
    x: Scalar,
    reference_unallocated: bool,
}

impl Circuit<Scalar> for Tiny {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(self.x))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::ONE))?;
        let p = cs.alloc_input(|| "p", || Ok(self.x))?;
        let mut ns = cs.namespace(|| "outer");
        let mut ns = ns.namespace(|| "inner");
        ns.enforce(
            || "x boolean",
            |lc| lc + x + (Scalar::ZERO, y),
            |lc| lc + x,
            |lc| lc + x,
        );
        ns.enforce(|| "p is x", |lc| lc + p, |lc| lc + CS::one(), |lc| lc + x);
        if self.reference_unallocated {
            let ghost = Variable::new_unchecked(Index::Aux(9));
            ns.enforce(|| "ghost", |lc| lc + ghost, |lc| lc, |lc| lc);
        }
        Ok(())
    }
}

#[test]
fn density_ignores_zero_coefficients_and_tracks_one() {
    let circuit = Tiny {
        x: Scalar::ONE,
        reference_unallocated: false,
    };
    let full = synthesize_full(circuit.clone()).unwrap();
    let d = Pce::record(circuit).unwrap().density();
    assert_eq!(d, full.density);
    assert_eq!(d.a_aux.iter_ones().collect::<Vec<_>>(), vec![0]);
    assert_eq!(d.b_aux.iter_ones().collect::<Vec<_>>(), vec![0]);
    assert_eq!(d.b_input.iter_ones().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn failing_constraint_carries_its_namespace_path() {
    let circuit = Tiny {
        x: Scalar::from(2),
        reference_unallocated: false,
    };
    match check_satisfied(circuit) {
        Err(SynthError::Unsatisfied {
            index: 0,
            name: Some(name),
        }) => assert_eq!(name, "outer/inner/x boolean"),
        other => panic!("expected Unsatisfied, got {other:?}"),
    }
}

#[test]
fn unallocated_variable_is_an_error_everywhere() {
    let circuit = Tiny {
        x: Scalar::ONE,
        reference_unallocated: true,
    };
    let is_ghost = |r: Result<(), SynthError>| matches!(r, Err(SynthError::UnallocatedVariable { constraint: 2, ref variable }) if variable == "aux 9");
    assert!(is_ghost(synthesize_full(circuit.clone()).map(drop)));
    assert!(is_ghost(Pce::record(circuit.clone()).map(drop)));
    assert!(is_ghost(check_satisfied(circuit)));
}

#[test]
fn circuit_errors_pass_through() {
    struct Missing;
    impl Circuit<Scalar> for Missing {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            cs.alloc(|| "x", || Err(SynthesisError::AssignmentMissing))?;
            Ok(())
        }
    }
    assert!(matches!(
        synthesize_witness(Missing),
        Err(SynthError::Circuit(SynthesisError::AssignmentMissing))
    ));
    assert!(matches!(
        synthesize_full(Missing),
        Err(SynthError::Circuit(_))
    ));
    // Recording never asks for values, so a circuit without a witness records fine.
    assert_eq!(Pce::record(Missing).unwrap().num_aux, 1);
}
