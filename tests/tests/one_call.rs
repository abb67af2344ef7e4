//! The one-call prover as a bellperson user meets it, on the CPU (the GPU side is
//! `gpu/one_call.rs`): parameters from bellperson's `generate_random_parameters`, written to
//! a file and read back by bellperson, a bellpepper circuit proved in one call, each proof
//! bellperson's type and accepted by bellperson's `verify_proof`.

use bellperson::groth16 as bp;
use blstrs::Bls12;
use cuzk_circuits::Sha256Preimage;
use cuzk_prover::Prover;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::io::BufReader;

fn bellperson_params(dir: &std::path::Path) -> bp::Parameters<Bls12> {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let generated =
        bp::generate_random_parameters::<Bls12, _, _>(Sha256Preimage::new(vec![0; 40]), &mut rng)
            .unwrap();
    let path = dir.join("sha256-40.params");
    generated
        .write(std::fs::File::create(&path).unwrap())
        .unwrap();
    let read =
        bp::Parameters::<Bls12>::read(BufReader::new(std::fs::File::open(&path).unwrap()), true)
            .unwrap();
    assert!(read == generated, "bellperson reads back what it wrote");
    read
}

#[test]
fn bellperson_parameters_give_bellperson_proofs_that_bellperson_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let params = bellperson_params(dir.path());
    let pvk = bp::prepare_verifying_key(&params.vk);
    let prover = Prover::cpu();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for byte in [1u8, 2] {
        let circuit = Sha256Preimage::new(vec![byte; 40]);
        let inputs = circuit.public_inputs();
        let proof: bp::Proof<Bls12> = prover
            .create_random_proof(circuit, &params, &mut rng)
            .unwrap();
        assert!(
            bp::verify_proof(&pvk, &proof, &inputs).unwrap(),
            "preimage {byte}"
        );
    }
    // The same randomness as bellperson's own prover: the same proof.
    let circuit = Sha256Preimage::new(vec![3; 40]);
    let ours = prover
        .create_random_proof(circuit.clone(), &params, &mut ChaCha8Rng::seed_from_u64(13))
        .unwrap();
    let theirs =
        bp::create_random_proof(circuit, &params, &mut ChaCha8Rng::seed_from_u64(13)).unwrap();
    assert_eq!(ours, theirs);
    assert_eq!(prover.circuits(), 1);
}
