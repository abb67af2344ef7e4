//! The CPU comparison: cuzk vs bellperson on one SHA-256 circuit with one parameter file,
//! runs interleaved, medians; ends with the `ratio_prove=… ratio_synth=…` line.

use crate::logcap::SynthesisTimes;
use crate::stats::{median, ms};
use anyhow::{ensure, Context, Result};
use blstrs::Bls12;
use cuzk_circuits::Sha256Preimage;
use cuzk_groth16::{
    generate_parameters, prepare_verifying_key, prove, verify_proof, PreparedParameters,
};
use cuzk_synth::{synthesize_witness, Pce};
use ff::Field;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};

/// Options of `cuzk-bench cpu`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Approximate constraint count of the SHA-256 circuit.
    #[arg(long, default_value_t = 1 << 16)]
    constraints: usize,
    /// Runs of each prover (interleaved); at least 5.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Seed of the preimage, parameters and proof randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: &Args) -> Result<()> {
    ensure!(
        args.runs >= 5,
        "--runs must be at least 5 (got {})",
        args.runs
    );
    let log = SynthesisTimes::install();
    let circuit = Sha256Preimage::with_approx_constraints(args.constraints, args.seed);
    let inputs = circuit.public_inputs();
    let threads = rayon::current_num_threads();

    eprintln!("==> recording the PCE of {}", circuit.circuit_key());
    let t = Instant::now();
    let pce = Pce::record(circuit.clone()).context("recording the PCE")?;
    eprintln!(
        "    {} constraints, {} aux, {:.1} s",
        pce.num_constraints,
        pce.num_aux,
        t.elapsed().as_secs_f64()
    );

    eprintln!("==> generating one parameter set for both provers");
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);
    let t = Instant::now();
    let params = generate_parameters(&pce, &mut rng).context("generating parameters")?;
    eprintln!("    {:.1} s", t.elapsed().as_secs_f64());
    let mut bytes = Vec::new();
    params.write(&mut bytes)?;
    let bp_params = bellperson::groth16::Parameters::<Bls12>::read(&bytes[..], false)
        .context("bellperson reading the parameter file")?;
    let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp_params.vk);
    let pvk = prepare_verifying_key(&params.vk);
    let params = PreparedParameters::from(params);

    let (mut cz_prove, mut cz_synth, mut bp_prove) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..args.runs {
        // cuzk: the whole proof from the circuit (PCE already loaded), as bellperson's call.
        let t = Instant::now();
        let w = synthesize_witness(circuit.clone())?;
        let proof = prove(
            &params,
            &pce,
            &w,
            Field::random(&mut rng),
            Field::random(&mut rng),
        )?;
        cz_prove.push(t.elapsed());
        ensure!(
            verify_proof(&pvk, &proof, &inputs)?,
            "cuzk proof {run} does not verify"
        );

        // cuzk synthesis alone (witness + a/b/c), timed on its own run.
        let t = Instant::now();
        let w = synthesize_witness(circuit.clone())?;
        let eval = pce.evaluate(&w)?;
        cz_synth.push(t.elapsed());
        drop(eval);

        // bellperson: its CPU prover; its synthesis time comes from its own log record.
        let t = Instant::now();
        let bp_proof =
            bellperson::groth16::create_random_proof(circuit.clone(), &bp_params, &mut rng)
                .map_err(|e| anyhow::anyhow!("bellperson proving: {e}"))?;
        bp_prove.push(t.elapsed());
        let ok = bellperson::groth16::verify_proof(&bp_pvk, &bp_proof, &inputs)
            .map_err(|e| anyhow::anyhow!("bellperson verifying: {e}"))?;
        ensure!(ok, "bellperson proof {run} does not verify");
        eprintln!(
            "    run {}: cuzk prove {} ms, cuzk synth {} ms, bellperson prove {} ms",
            run + 1,
            ms(cz_prove[run]),
            ms(cz_synth[run]),
            ms(bp_prove[run])
        );
    }
    let bp_synth: Vec<Duration> = log.take();
    ensure!(
        bp_synth.len() == args.runs,
        "expected {} bellperson synthesis records, captured {}",
        args.runs,
        bp_synth.len()
    );

    let (cp, cs, bp, bs) = (
        median(&cz_prove),
        median(&cz_synth),
        median(&bp_prove),
        median(&bp_synth),
    );
    let ratio_prove = cp.as_secs_f64() / bp.as_secs_f64();
    let ratio_synth = cs.as_secs_f64() / bs.as_secs_f64();
    println!();
    println!(
        "circuit: {} ({} constraints, {} aux), {} runs each, interleaved, {} threads",
        circuit.circuit_key(),
        pce.num_constraints,
        pce.num_aux,
        args.runs,
        threads
    );
    println!("| what | cuzk median ms | bellperson median ms | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| prove (synthesis included) | {} | {} | {:.3} |",
        ms(cp),
        ms(bp),
        ratio_prove
    );
    println!(
        "| synthesis | {} | {} | {:.3} |",
        ms(cs),
        ms(bs),
        ratio_synth
    );
    println!("ratio_prove={ratio_prove:.3} ratio_synth={ratio_synth:.3}");
    Ok(())
}
