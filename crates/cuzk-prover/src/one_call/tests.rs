//! The one-call prover on the CPU (the GPU side is in the workspace's GPU tests): proofs
//! equal the reference's for the same randomness and verify, the circuit is recorded once
//! per parameter set, every source reads the same parameters, and a wrong circuit is refused.

use super::*;
use cuzk_circuits::Sha256Preimage;
use cuzk_groth16::{create_random_proof, generate_random_parameters};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn params_for(preimage: &[u8]) -> Parameters {
    generate_random_parameters(
        Sha256Preimage::new(preimage.to_vec()),
        &mut ChaCha8Rng::seed_from_u64(1),
    )
    .unwrap()
}

#[test]
fn cpu_proofs_equal_the_reference_and_the_circuit_is_recorded_once() {
    let params = params_for(&[7; 32]);
    let prepared = PreparedParameters::from(&params);
    let prover = Prover::cpu();
    assert_eq!(prover.device(), None);
    for (seed, byte) in [(3u64, 7u8), (4, 9)] {
        let circuit = Sha256Preimage::new(vec![byte; 32]);
        let inputs = circuit.public_inputs();
        let proof = prover
            .create_random_proof(
                circuit.clone(),
                &params,
                &mut ChaCha8Rng::seed_from_u64(seed),
            )
            .unwrap();
        let want =
            create_random_proof(circuit, &prepared, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
        assert_eq!(proof, want, "seed {seed}");
        let pvk = prepare_verifying_key(&params.vk);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
    }
    assert_eq!(prover.circuits(), 1);
}

#[test]
fn a_batch_and_a_parameter_file_give_the_same_proofs() {
    let params = params_for(&[1; 32]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sha256.params");
    params.write_file(&path).unwrap();
    let circuits: Vec<Sha256Preimage> =
        (0..3u8).map(|b| Sha256Preimage::new(vec![b; 32])).collect();
    let from_memory = Prover::cpu()
        .create_random_proof_batch(circuits.clone(), &params, &mut ChaCha8Rng::seed_from_u64(5))
        .unwrap();
    let from_file = Prover::cpu()
        .create_random_proof_batch(circuits, path.as_path(), &mut ChaCha8Rng::seed_from_u64(5))
        .unwrap();
    assert_eq!(from_memory.len(), 3);
    assert_eq!(from_memory, from_file);
    assert!(Prover::cpu()
        .create_random_proof_batch(
            Vec::<Sha256Preimage>::new(),
            &params,
            &mut ChaCha8Rng::seed_from_u64(5)
        )
        .unwrap()
        .is_empty());
}

#[test]
fn another_circuit_for_the_parameters_is_refused_naming_it() {
    // Parameters for a 32-byte preimage; the second circuit hashes 64 bytes.
    let params = params_for(&[1; 32]);
    let prover = Prover::cpu();
    let good = Sha256Preimage::new(vec![2; 32]);
    let bad = Sha256Preimage::new(vec![2; 64]);
    let r = prover.create_random_proof_batch(
        vec![good, bad],
        &params,
        &mut ChaCha8Rng::seed_from_u64(6),
    );
    match r {
        Err(Error::InBatch { index: 1, .. }) => {}
        other => panic!("expected witness 1 refused, got {other:?}"),
    }
    // And first, before any is cached: refused at proving (the parameters' shape).
    let r = Prover::cpu().create_random_proof(
        Sha256Preimage::new(vec![2; 64]),
        &params,
        &mut ChaCha8Rng::seed_from_u64(6),
    );
    assert!(r.is_err(), "got {r:?}");
}

#[test]
fn a_missing_parameter_file_is_named() {
    let path = Path::new("/nonexistent/cuzk-prover-test.params");
    let r = Prover::cpu().create_random_proof(
        Sha256Preimage::new(vec![0; 32]),
        path,
        &mut ChaCha8Rng::seed_from_u64(0),
    );
    match r {
        Err(e @ Error::Parameters { .. }) => {
            assert!(e.to_string().contains("cuzk-prover-test.params"), "{e}")
        }
        other => panic!("expected a parameters error, got {other:?}"),
    }
}
