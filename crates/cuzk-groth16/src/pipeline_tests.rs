//! End-to-end unit tests on the tiny test circuit: generate, prove, verify, and the typed
//! errors of bad inputs.

use crate::generator::domain_log_size;
use crate::test_circuit::Cubic;
use crate::*;
use cuzk_field::consts::root_of_unity;
use cuzk_field::{Field, Scalar};
use cuzk_synth::{synthesize_full, synthesize_witness, Pce};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn setup(seed: u64) -> (Pce, Parameters, PreparedParameters, PreparedVerifyingKey) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pce = Pce::record(Cubic::new(3)).unwrap();
    let params = generate_parameters(&pce, &mut rng).unwrap();
    let prepared = PreparedParameters::from(&params);
    let pvk = prepare_verifying_key(&params.vk);
    (pce, params, prepared, pvk)
}

#[test]
fn proofs_verify_and_both_paths_agree() {
    let (pce, params, prepared, pvk) = setup(1);
    assert_eq!(params.vk.ic.len(), 2);
    assert_eq!(
        params.h.len(),
        (1usize << domain_log_size(pce.num_rows()).unwrap()) - 1
    );

    let circuit = Cubic::new(3);
    let (r, s) = (Scalar::from(11u64), Scalar::from(13u64));
    let witness = synthesize_witness(circuit.clone()).unwrap();
    let by_pce = prove(&prepared, &pce, &witness, r, s).unwrap();
    let synthesis = synthesize_full(circuit.clone()).unwrap();
    let by_reference = prove_synthesized(&prepared, &synthesis, r, s).unwrap();
    assert_eq!(by_pce, by_reference);
    assert_eq!(
        create_proof(circuit.clone(), &prepared, r, s).unwrap(),
        by_pce
    );

    let inputs = circuit.public_inputs();
    assert!(verify_proof(&pvk, &by_pce, &inputs).unwrap());
    assert!(!verify_proof(&pvk, &by_pce, &[inputs[0] + Scalar::ONE]).unwrap());

    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let random = create_random_proof(circuit.clone(), &prepared, &mut rng).unwrap();
    assert!(verify_proof(&pvk, &random, &inputs).unwrap());
    let via_pce = create_random_proof_with_pce(circuit, &pce, &prepared, &mut rng).unwrap();
    assert!(verify_proof(&pvk, &via_pce, &inputs).unwrap());
}

#[test]
fn batches_prove_and_verify() {
    let (pce, _, prepared, pvk) = setup(3);
    let circuits: Vec<Cubic> = (1..=3).map(Cubic::new).collect();
    let witnesses: Vec<_> = circuits
        .iter()
        .map(|c| synthesize_witness(c.clone()).unwrap())
        .collect();
    let randomness: Vec<(Scalar, Scalar)> = (0..3u64)
        .map(|i| (Scalar::from(i + 5), Scalar::from(i + 50)))
        .collect();
    let proofs = prove_batch(&prepared, &pce, &witnesses, &randomness).unwrap();
    for ((w, &(r, s)), p) in witnesses.iter().zip(&randomness).zip(&proofs) {
        assert_eq!(prove(&prepared, &pce, w, r, s).unwrap(), *p);
    }
    let inputs: Vec<Vec<Scalar>> = circuits.iter().map(Cubic::public_inputs).collect();
    let refs: Vec<&Proof> = proofs.iter().collect();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    assert!(verify_proofs_batch(&pvk, &mut rng, &refs, &inputs).unwrap());
    assert!(verify_proofs_batch(&pvk, &mut rng, &[], &[]).unwrap());
    assert!(verify_proofs_batch(&pvk, &mut rng, &refs[..1], &inputs[..1]).unwrap());

    // Swapping two proofs' inputs must fail the batch.
    let mut swapped = inputs.clone();
    swapped.swap(0, 1);
    assert!(!verify_proofs_batch(&pvk, &mut rng, &refs, &swapped).unwrap());
    assert!(matches!(
        prove_batch(&prepared, &pce, &witnesses, &randomness[..2]),
        Err(Error::ShapeMismatch { .. })
    ));
    let mut bad = witnesses.clone();
    bad[1].aux[0] += Scalar::ONE;
    match prove_batch(&prepared, &pce, &bad, &randomness) {
        Err(Error::InBatch { index: 1, source }) => {
            assert!(matches!(*source, Error::Unsatisfied { row: 0 }))
        }
        other => panic!("expected the second witness to fail, got {other:?}"),
    }
}

#[test]
fn wrong_public_input_count_is_a_typed_error() {
    let (_, _, prepared, pvk) = setup(5);
    let proof = create_proof(Cubic::new(3), &prepared, Scalar::ONE, Scalar::ONE).unwrap();
    assert!(matches!(
        verify_proof(&pvk, &proof, &[]),
        Err(Error::WrongInputCount {
            expected: 1,
            found: 0
        })
    ));
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    assert!(matches!(
        verify_proofs_batch(
            &pvk,
            &mut rng,
            &[&proof, &proof],
            &[vec![Scalar::ONE], vec![]]
        ),
        Err(Error::WrongInputCount {
            expected: 1,
            found: 0
        })
    ));

    // A circuit with one more public input than the parameters were made for.
    let mut wider = Cubic::new(3);
    wider.extra_inputs.push(Scalar::from(9u64));
    let pce = Pce::record(wider.clone()).unwrap();
    let witness = synthesize_witness(wider.clone()).unwrap();
    assert!(matches!(
        prove(&prepared, &pce, &witness, Scalar::ONE, Scalar::ONE),
        Err(Error::WrongInputCount {
            expected: 1,
            found: 2
        })
    ));
    assert!(matches!(
        create_proof(wider, &prepared, Scalar::ONE, Scalar::ONE),
        Err(Error::WrongInputCount {
            expected: 1,
            found: 2
        })
    ));
}

#[test]
fn unsatisfied_witness_names_the_row() {
    let (pce, _, prepared, _) = setup(7);
    let mut bad = Cubic::new(3);
    bad.y += Scalar::ONE;
    let witness = synthesize_witness(bad.clone()).unwrap();
    // Rows: x·x, x²·x, the output constraint (row 2), then the input rows.
    assert!(matches!(
        prove(&prepared, &pce, &witness, Scalar::ONE, Scalar::ONE),
        Err(Error::Unsatisfied { row: 2 })
    ));
    assert!(matches!(
        create_proof(bad, &prepared, Scalar::ONE, Scalar::ONE),
        Err(Error::Unsatisfied { row: 2 })
    ));
}

#[test]
fn mismatched_witness_shapes_are_typed_errors() {
    let (pce, _, prepared, _) = setup(8);
    let mut witness = synthesize_witness(Cubic::new(3)).unwrap();
    witness.aux.push(Scalar::ONE);
    assert!(matches!(
        prove(&prepared, &pce, &witness, Scalar::ONE, Scalar::ONE),
        Err(Error::ShapeMismatch { .. })
    ));
    let mut witness = synthesize_witness(Cubic::new(3)).unwrap();
    witness.inputs[0] = Scalar::from(2u64);
    assert!(matches!(
        prove(&prepared, &pce, &witness, Scalar::ONE, Scalar::ONE),
        Err(Error::ConstantNotOne)
    ));
}

#[test]
fn degenerate_setups_are_refused() {
    let pce = Pce::record(Cubic::new(3)).unwrap();
    let log_n = domain_log_size(pce.num_rows()).unwrap();
    let mut toxic = ToxicWaste {
        tau: root_of_unity(log_n).unwrap(),
        alpha: Scalar::from(2u64),
        beta: Scalar::from(3u64),
        gamma: Scalar::from(4u64),
        delta: Scalar::from(5u64),
    };
    assert!(matches!(
        generate_parameters_with(&pce, &toxic),
        Err(Error::DegenerateToxicWaste(_))
    ));
    toxic.tau = Scalar::from(1234u64);
    toxic.delta = Scalar::ZERO;
    assert!(matches!(
        generate_parameters_with(&pce, &toxic),
        Err(Error::DegenerateToxicWaste(_))
    ));

    let mut unused = Cubic::new(3);
    unused.unused_aux = true;
    let pce = Pce::record(unused).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    // Aux variables: x, x², x³, then the unused one.
    assert!(matches!(
        generate_parameters(&pce, &mut rng),
        Err(Error::UnconstrainedVariable { index: 3 })
    ));
}

#[test]
fn deterministic_generation_is_reproducible_and_round_trips() {
    let pce = Pce::record(Cubic::new(3)).unwrap();
    let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(10));
    let params = generate_parameters_with(&pce, &toxic).unwrap();
    assert_eq!(generate_parameters_with(&pce, &toxic).unwrap(), params);
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();
    let back = Parameters::read(&bytes[..], true).unwrap();
    assert_eq!(back, params);
    let prepared = PreparedParameters::from(back);
    let proof = create_proof(Cubic::new(4), &prepared, Scalar::ONE, Scalar::ONE).unwrap();
    let pvk = prepare_verifying_key(prepared.vk());
    assert!(verify_proof(&pvk, &proof, &Cubic::new(4).public_inputs()).unwrap());
}
