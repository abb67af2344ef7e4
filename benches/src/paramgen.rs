//! Parameter generation, cuzk vs bellperson, on the same SHA-256 circuit (one run each,
//! cuzk first; bellperson's generator is slow enough that one run is the measurement).

use crate::stats::ms;
use anyhow::{Context, Result};
use blstrs::Bls12;
use cuzk_circuits::Sha256Preimage;
use cuzk_groth16::generate_parameters;
use cuzk_synth::Pce;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::Instant;

/// Options of `cuzk-bench paramgen`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Approximate constraint count of the SHA-256 circuit.
    #[arg(long, default_value_t = 1 << 16)]
    constraints: usize,
    /// Seed of the preimage and the toxic waste.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: &Args) -> Result<()> {
    let circuit = Sha256Preimage::with_approx_constraints(args.constraints, args.seed);
    let mut rng = ChaCha20Rng::seed_from_u64(args.seed);

    eprintln!("==> cuzk: recording the PCE and generating parameters");
    let t = Instant::now();
    let pce = Pce::record(circuit.clone()).context("recording the PCE")?;
    let params = generate_parameters(&pce, &mut rng).context("cuzk generating parameters")?;
    let cuzk = t.elapsed();
    drop(params);

    eprintln!("==> bellperson: generate_random_parameters");
    let t = Instant::now();
    bellperson::groth16::generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng)
        .map_err(|e| anyhow::anyhow!("bellperson generating parameters: {e}"))?;
    let bellperson = t.elapsed();

    println!();
    println!(
        "circuit: {} ({} constraints), {} threads",
        circuit.circuit_key(),
        pce.num_constraints,
        rayon::current_num_threads()
    );
    println!("| what | cuzk ms | bellperson ms | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| parameter generation (PCE recording included) | {} | {} | {:.3} |",
        ms(cuzk),
        ms(bellperson),
        cuzk.as_secs_f64() / bellperson.as_secs_f64()
    );
    Ok(())
}
