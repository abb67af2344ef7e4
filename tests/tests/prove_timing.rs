//! Wall-clock comparison of cuzk's CPU prover with bellperson's on a SHA-256 circuit of
//! about 2^16 constraints. Ignored by default (it is a measurement, not a check); run
//!
//! ```text
//! cargo test --release -p cuzk-tests --test prove_timing -- --ignored --nocapture
//! ```
//!
//! `CUZK_TIMING_CONSTRAINTS` changes the circuit size, `CUZK_TIMING_RUNS` the runs per
//! prover (the best run of each is compared, as the machine may be shared), and
//! `CUZK_TIMING_SETUP=1` also times bellperson's parameter generation.

use bellperson::groth16 as bp;
use cuzk_circuits::Sha256Preimage;
use cuzk_groth16::{
    create_random_proof, generate_parameters, prepare_verifying_key, prove, verify_proof,
    PreparedParameters,
};
use cuzk_synth::{synthesize_witness, Pce};
use cuzk_tests::{params_to_bellperson, proof_from_bellperson};
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

#[test]
#[ignore = "a measurement; run in release with --ignored --nocapture"]
fn sha256_prove_time_against_bellperson() {
    let constraints = env_usize("CUZK_TIMING_CONSTRAINTS", 65_000);
    let runs = env_usize("CUZK_TIMING_RUNS", 3);
    let circuit = Sha256Preimage::with_approx_constraints(constraints, 7);
    let inputs = circuit.public_inputs();
    let mut rng = ChaCha8Rng::seed_from_u64(1);

    let (pce, t_record) = timed(|| Pce::record(circuit.clone()).unwrap());
    println!(
        "circuit: {} bytes of preimage, {} constraints, {} rows, {} aux; PCE recorded in {t_record:.2?}",
        circuit.preimage().len(),
        pce.num_constraints,
        pce.num_rows(),
        pce.num_aux
    );
    let (params, t_gen) = timed(|| generate_parameters(&pce, &mut rng).unwrap());
    println!("cuzk parameter generation: {t_gen:.2?}");
    if std::env::var("CUZK_TIMING_SETUP").is_ok_and(|v| v == "1") {
        let (_, t) = timed(|| {
            bp::generate_random_parameters::<blstrs::Bls12, _, _>(circuit.clone(), &mut rng)
                .unwrap()
        });
        println!("bellperson parameter generation: {t:.2?}");
    }
    let bp_params = params_to_bellperson(&params);
    let prepared = PreparedParameters::from(&params);
    let pvk = prepare_verifying_key(&params.vk);

    let mut best_bp = Duration::MAX;
    let mut best_pce = Duration::MAX;
    let mut best_full = Duration::MAX;
    for run in 0..runs {
        // Interleaved, so that load from other processes hits both alike.
        let (proof, t_bp) =
            timed(|| bp::create_random_proof(circuit.clone(), &bp_params, &mut rng).unwrap());
        assert!(verify_proof(&pvk, &proof_from_bellperson(&proof), &inputs).unwrap());
        best_bp = best_bp.min(t_bp);

        let start = Instant::now();
        let (witness, t_synth) = timed(|| synthesize_witness(circuit.clone()).unwrap());
        let (r, s) = (
            cuzk_field::Scalar::random(&mut rng),
            cuzk_field::Scalar::random(&mut rng),
        );
        let (proof, t_prove) = timed(|| prove(&prepared, &pce, &witness, r, s).unwrap());
        let t_pce = start.elapsed();
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
        best_pce = best_pce.min(t_pce);

        let (proof, t_full) =
            timed(|| create_random_proof(circuit.clone(), &prepared, &mut rng).unwrap());
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap());
        best_full = best_full.min(t_full);

        println!(
            "run {run}: bellperson create_random_proof {t_bp:.2?} | cuzk PCE path {t_pce:.2?} \
             (witness synthesis {t_synth:.2?}, evaluate + prove {t_prove:.2?}) | cuzk full-synthesis path {t_full:.2?}"
        );
    }
    println!(
        "best of {runs}: bellperson {best_bp:.2?}, cuzk PCE path {best_pce:.2?} ({:.2}x), cuzk full-synthesis path {best_full:.2?} ({:.2}x)",
        best_bp.as_secs_f64() / best_pce.as_secs_f64(),
        best_bp.as_secs_f64() / best_full.as_secs_f64(),
    );
}
