//! Interoperability with bellperson on seeded random circuits (cuzk-synth's
//! `RandomCircuit`): generators agree byte for byte, keys load both ways (fully checked),
//! proofs verify both ways and deterministic proofs are identical.

use bellpepper_core::SynthesisError;
use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_groth16::{
    create_proof, generate_parameters_with, prepare_verifying_key, prove, verify_proof, Error,
    PreparedParameters, ToxicWaste,
};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{synthesize_witness, Pce};
use cuzk_tests::{
    bellperson_proof_bytes, params_bytes, params_from_bellperson, params_to_bellperson,
    proof_from_bellperson, proof_to_bellperson, Keyed,
};
use ff::Field;
use group::Group;
use proptest::prelude::*;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// bellperson's parameters for `circuit` from the given toxic waste and the standard generators.
fn bellperson_params<C>(
    circuit: C,
    toxic: &ToxicWaste,
) -> Result<bp::Parameters<Bls12>, SynthesisError>
where
    C: bellpepper_core::Circuit<Scalar>,
{
    bp::generate_parameters::<Bls12, _>(
        circuit,
        G1Projective::generator(),
        G2Projective::generator(),
        toxic.alpha,
        toxic.beta,
        toxic.gamma,
        toxic.delta,
        toxic.tau,
    )
}

/// Runs every interop check on one random circuit (made keyable, see [`Keyed`]).
fn check_circuit(seed: u64, size: usize) {
    let raw = RandomCircuit::new(seed, size);
    let inputs = raw.public_inputs().to_vec();
    let circuit = Keyed::new(raw.clone());
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xabc);
    let toxic = ToxicWaste::random(&mut rng);

    // Both generators refuse the raw circuit exactly when it has unconstrained variables.
    if circuit.num_added_rows() > 0 {
        let raw_pce = Pce::record(raw.clone()).unwrap();
        assert!(matches!(
            generate_parameters_with(&raw_pce, &toxic),
            Err(Error::UnconstrainedVariable { .. })
        ));
        assert!(matches!(
            bellperson_params(raw, &toxic),
            Err(SynthesisError::UnconstrainedVariable)
        ));
    }

    let pce = Pce::record(circuit.clone()).unwrap();
    let params = generate_parameters_with(&pce, &toxic).unwrap();
    let bp_params = bellperson_params(circuit.clone(), &toxic).unwrap();

    // Keys: byte-identical, and each loads (fully checked) in the other.
    assert_eq!(params_from_bellperson(&bp_params), params);
    let bp_loaded = params_to_bellperson(&params);
    assert!(bp_loaded == bp_params);
    assert_eq!(
        params_bytes(&params),
        cuzk_tests::bellperson_params_bytes(&bp_params)
    );

    let prepared = PreparedParameters::from(&params);
    let pvk = prepare_verifying_key(&params.vk);
    let bp_pvk = bp::prepare_verifying_key(&bp_loaded.vk);

    // Deterministic proofs: both cuzk paths equal bellperson's create_proof.
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let theirs = bp::create_proof(circuit.clone(), &bp_loaded, r, s).unwrap();
    let witness = synthesize_witness(circuit.clone()).unwrap();
    let by_pce = prove(&prepared, &pce, &witness, r, s).unwrap();
    let by_reference = create_proof(circuit.clone(), &prepared, r, s).unwrap();
    assert_eq!(by_pce.to_bytes()[..], bellperson_proof_bytes(&theirs)[..]);
    assert_eq!(by_reference, by_pce);

    // Cross verification.
    assert!(bp::verify_proof(&bp_pvk, &proof_to_bellperson(&by_pce), &inputs).unwrap());
    let bp_random = bp::create_random_proof(circuit, &bp_params, &mut rng).unwrap();
    assert!(verify_proof(&pvk, &proof_from_bellperson(&bp_random), &inputs).unwrap());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, .. ProptestConfig::default() })]

    #[test]
    fn random_circuits_interoperate_with_bellperson(seed in any::<u64>(), size in 5usize..120) {
        check_circuit(seed, size);
    }
}
