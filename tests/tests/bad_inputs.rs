//! Cross-crate bad inputs: every one is a typed error naming what is wrong, never a panic
//! and never an invalid proof.

use blstrs::Scalar;
use cuzk_groth16::{
    create_proof, generate_parameters, prepare_verifying_key, prove, prove_synthesized,
    verify_proof, Error, Parameters, PointError, PreparedParameters, Proof, Section,
};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{synthesize_full, synthesize_witness, Pce};
use cuzk_tests::Keyed;
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A random circuit made keyable, with its PCE and a key.
fn keyed_circuit(seed: u64, size: usize) -> (Keyed<RandomCircuit>, Pce, Parameters) {
    let circuit = Keyed::new(RandomCircuit::new(seed, size));
    let pce = Pce::record(circuit.clone()).unwrap();
    let params = generate_parameters(&pce, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
    (circuit, pce, params)
}

#[test]
fn broken_constraint_is_reported_by_row_on_both_paths() {
    let (circuit, pce, params) = keyed_circuit(100, 80);
    let prepared = PreparedParameters::from(params);
    let breakable = circuit.inner().breakable_constraints();
    assert!(!breakable.is_empty());
    for &row in breakable.iter().take(3) {
        let mut bad = circuit.clone();
        assert!(bad.inner_mut().break_constraint(row));
        let witness = synthesize_witness(bad.clone()).unwrap();
        match prove(&prepared, &pce, &witness, Scalar::ONE, Scalar::ONE) {
            Err(Error::Unsatisfied { row: got }) => assert_eq!(got, row),
            other => panic!("expected Unsatisfied at {row}, got {other:?}"),
        }
        let full = synthesize_full(bad).unwrap();
        match prove_synthesized(&prepared, &full, Scalar::ONE, Scalar::ONE) {
            Err(Error::Unsatisfied { row: got }) => assert_eq!(got, row),
            other => panic!("expected Unsatisfied at {row}, got {other:?}"),
        }
    }
}

#[test]
fn parameters_of_another_circuit_are_refused() {
    let (_, pce, params) = keyed_circuit(200, 80);
    let prepared = PreparedParameters::from(params);
    let (other, other_pce, _) = keyed_circuit(300, 40);
    assert_ne!(pce.num_rows(), other_pce.num_rows());
    let witness = synthesize_witness(other.clone()).unwrap();
    let err = prove(&prepared, &other_pce, &witness, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::WrongInputCount { .. } | Error::ShapeMismatch { .. }
        ),
        "unexpected error {err:?}"
    );
    let err = create_proof(other, &prepared, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::WrongInputCount { .. } | Error::ShapeMismatch { .. }
        ),
        "unexpected error {err:?}"
    );
}

#[test]
fn pce_of_another_circuit_is_refused() {
    let (circuit, pce, params) = keyed_circuit(400, 80);
    let prepared = PreparedParameters::from(params);
    let witness = synthesize_witness(circuit).unwrap();
    let (_, other_pce, _) = keyed_circuit(500, 40);
    assert_ne!(pce.num_rows(), other_pce.num_rows());
    let err = prove(&prepared, &other_pce, &witness, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch { .. } | Error::WrongInputCount { .. }
        ),
        "unexpected error {err:?}"
    );
}

#[test]
fn damaged_parameter_files_name_the_problem() {
    let (_, _, params) = keyed_circuit(600, 80);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.params");
    params.write_file(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(Parameters::read_file(&path, true).unwrap(), params);

    // Cut inside the last section (b_g2).
    std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    match Parameters::read_file(&path, false) {
        Err(Error::Truncated {
            section: Section::BG2,
            expected,
            found,
        }) => {
            assert_eq!(expected, params.b_g2.len());
            assert_eq!(found, params.b_g2.len() - 1);
        }
        other => panic!("expected truncation in b_g2, got {other:?}"),
    }

    // Corrupt the first H point (it follows the vk and h's length prefix).
    let h_at = 3 * 96 + 3 * 192 + 4 + params.vk.ic.len() * 96 + 4;
    let mut bad = bytes.clone();
    bad[h_at + 95] ^= 0x01;
    std::fs::write(&path, &bad).unwrap();
    assert!(matches!(
        Parameters::read_file(&path, false),
        Err(Error::InvalidPoint {
            section: Section::H,
            index: 0,
            reason: PointError::NotOnCurve
        })
    ));
}

#[test]
fn damaged_proofs_and_wrong_inputs_are_typed_errors() {
    let (circuit, _, params) = keyed_circuit(700, 80);
    let inputs = circuit.inner().public_inputs().to_vec();
    let prepared = PreparedParameters::from(&params);
    let pvk = prepare_verifying_key(&params.vk);
    let proof = create_proof(circuit, &prepared, Scalar::from(3u64), Scalar::from(4u64)).unwrap();
    assert!(verify_proof(&pvk, &proof, &inputs).unwrap());

    let mut more = inputs.clone();
    more.push(Scalar::ONE);
    assert!(matches!(
        verify_proof(&pvk, &proof, &more),
        Err(Error::WrongInputCount { .. })
    ));

    let mut bytes = proof.to_bytes();
    bytes[10] ^= 0x40;
    match Proof::from_bytes(&bytes) {
        // Either the damaged A fails to decode, or it decodes to another point and the
        // proof no longer verifies.
        Err(Error::InvalidPoint {
            section: Section::ProofA,
            ..
        }) => {}
        Ok(p) => assert!(!verify_proof(&pvk, &p, &inputs).unwrap()),
        Err(e) => panic!("unexpected error {e:?}"),
    }
    assert!(matches!(
        Proof::from_bytes(&bytes[..100]),
        Err(Error::ProofLength { .. })
    ));
}
