//! GPU parameter generation against bellperson: parameters made on the GPU equal bellperson's
//! `generate_parameters` for the same toxic waste byte for byte, load in bellperson fully
//! checked, and give proofs (cuzk's prover and bellperson's) that bellperson's verifier accepts.

use bellpepper_core::Circuit;
use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_cuda::Device;
use cuzk_groth16::{prove, PreparedParameters, ToxicWaste};
use cuzk_prover::generate_parameters_gpu;
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{synthesize_witness, Pce};
use cuzk_tests::{bellperson_params_bytes, params_bytes, proof_to_bellperson, Keyed};
use ff::Field;
use group::Group;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;

fn device() -> &'static Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE.get_or_init(|| Device::open(0).expect("a CUDA device"))
}

/// Generates parameters for `circuit` on the GPU and checks them against bellperson: the same
/// bytes as its generator (when `compare` is set), and accepted proofs from both provers.
fn check<C: Circuit<Scalar> + Clone + Send>(
    circuit: C,
    inputs: &[Scalar],
    seed: u64,
    compare: bool,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pce = Pce::record(circuit.clone()).expect("recording");
    let toxic = ToxicWaste::random(&mut rng);
    let params = generate_parameters_gpu(device(), &pce, &toxic).expect("GPU parameters");
    let bytes = params_bytes(&params);
    if compare {
        let theirs = bp::generate_parameters::<Bls12, _>(
            circuit.clone(),
            G1Projective::generator(),
            G2Projective::generator(),
            toxic.alpha,
            toxic.beta,
            toxic.gamma,
            toxic.delta,
            toxic.tau,
        )
        .expect("bellperson parameters");
        assert!(
            bytes == bellperson_params_bytes(&theirs),
            "seed {seed}: GPU parameters differ from bellperson's"
        );
    }
    let loaded = bp::Parameters::<Bls12>::read(&bytes[..], true).expect("bellperson reads them");
    let pvk = bp::prepare_verifying_key(&loaded.vk);

    let prepared = PreparedParameters::from(&params);
    let witness = synthesize_witness(circuit.clone()).expect("witness");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let ours = prove(&prepared, &pce, &witness, r, s).expect("cuzk proof");
    assert!(
        bp::verify_proof(&pvk, &proof_to_bellperson(&ours), inputs).unwrap(),
        "seed {seed}: bellperson rejects cuzk's proof"
    );
    let theirs = bp::create_random_proof(circuit, &loaded, &mut rng).expect("bellperson proof");
    assert!(
        bp::verify_proof(&pvk, &theirs, inputs).unwrap(),
        "seed {seed}: bellperson rejects its own proof"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generated_parameters_match_bellperson_on_random_circuits() {
    for seed in 0..8u64 {
        let raw = RandomCircuit::new(seed, 20 + 25 * seed as usize);
        let inputs = raw.public_inputs().to_vec();
        check(Keyed::new(raw), &inputs, seed, true);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generated_parameters_match_bellperson_on_sha256() {
    let circuit = Sha256Preimage::with_approx_constraints(1 << 16, 2);
    let inputs = circuit.public_inputs();
    check(circuit, &inputs, 100, true);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generated_parameters_prove_synthetic_porep() {
    let circuit = SyntheticPoRep::new((1 << 16) - 2, 3);
    let inputs = circuit.public_inputs();
    check(circuit, &inputs, 101, false);
}
