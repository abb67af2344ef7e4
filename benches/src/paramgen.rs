//! Parameter generation: cuzk vs bellperson on the same SHA-256 circuit (one run each, cuzk
//! first; bellperson's generator is slow enough that one run is the measurement), or with
//! `--synthetic`, cuzk's CPU and GPU generators on PoRep-shaped circuits with phase times.

#[cfg(feature = "cuda")]
mod gpu;

use crate::stats::ms;
use anyhow::{ensure, Context, Result};
use blstrs::Bls12;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_groth16::{
    generate_parameters, generate_parameters_with_timings, ParamgenTimings, ToxicWaste,
};
use cuzk_synth::Pce;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::time::{Duration, Instant};

/// Options of `cuzk-bench paramgen`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Approximate constraint count of the SHA-256 circuit.
    #[arg(long, default_value_t = 1 << 16)]
    constraints: usize,
    /// Seed of the preimage and the toxic waste.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Instead of the SHA-256 comparison: `SyntheticPoRep` circuits of 2^k − 2 constraints
    /// (a domain of exactly 2^k) for each log2 size k given, generated with cuzk alone.
    #[arg(long, value_delimiter = ',')]
    synthetic: Vec<u32>,
    /// With `--synthetic`: run the CPU generator.
    #[arg(long)]
    cpu: bool,
    /// With `--synthetic`: run the GPU generator (feature `cuda`).
    #[cfg(feature = "cuda")]
    #[command(flatten)]
    gpu: gpu::GpuArgs,
    /// With `--synthetic`: record the PCE with `Pce::record` (timed) instead of writing it
    /// from the circuit's known shape (`SyntheticPoRep::pce`).
    #[arg(long)]
    record: bool,
}

pub fn run(args: &Args) -> Result<()> {
    if !args.synthetic.is_empty() {
        return run_synthetic(args);
    }
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

/// One generated parameter set's figures.
struct SynthRow {
    log_n: u32,
    mode: String,
    pce: Duration,
    timings: ParamgenTimings,
}

/// `--synthetic`: cuzk's generators on PoRep-shaped circuits, with phase times.
fn run_synthetic(args: &Args) -> Result<()> {
    #[cfg(feature = "cuda")]
    let gpu = args.gpu.enabled();
    #[cfg(not(feature = "cuda"))]
    let gpu = false;
    ensure!(
        args.cpu || gpu,
        "--synthetic needs --cpu or --gpu (the latter with the `cuda` feature)"
    );
    #[cfg(feature = "cuda")]
    let device = if gpu { Some(gpu::open()?) } else { None };
    let mut rows = Vec::new();
    for &log_n in &args.synthetic {
        ensure!(
            (2..=31).contains(&log_n),
            "--synthetic sizes are log2 sizes in 2..=31 (got {log_n})"
        );
        let num_constraints = (1usize << log_n) - 2;
        eprintln!("==> 2^{log_n}: PCE of SyntheticPoRep({num_constraints})");
        let t = Instant::now();
        let circuit = SyntheticPoRep::new(num_constraints, args.seed);
        let pce = if args.record {
            Pce::record(circuit).context("recording the PCE")?
        } else {
            circuit.pce()
        };
        let pce_time = t.elapsed();
        eprintln!("    {:.1} s", pce_time.as_secs_f64());
        let toxic = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(args.seed));
        #[cfg(feature = "cuda")]
        let mut gpu_params = None;
        #[cfg(feature = "cuda")]
        if let Some(device) = &device {
            let keep_one = args.cpu;
            for (mode, timings, params) in gpu::run(&args.gpu, device, &pce, &toxic, keep_one)? {
                if params.is_some() {
                    gpu_params = params;
                }
                rows.push(SynthRow {
                    log_n,
                    mode,
                    pce: pce_time,
                    timings,
                });
            }
        }
        if args.cpu {
            eprintln!("==> 2^{log_n}: CPU generator");
            let (params, timings) = generate_parameters_with_timings(&pce, &toxic)
                .context("cuzk generating parameters on the CPU")?;
            eprintln!("    {:.1} s", timings.total.as_secs_f64());
            #[cfg(feature = "cuda")]
            if let Some(g) = gpu_params.take() {
                ensure!(
                    g == params,
                    "2^{log_n}: GPU and CPU parameters differ for the same toxic waste"
                );
                eprintln!("    GPU and CPU parameters are identical");
            }
            drop(params);
            rows.push(SynthRow {
                log_n,
                mode: "cpu".into(),
                pce: pce_time,
                timings,
            });
        }
    }
    print_synthetic(&rows);
    Ok(())
}

fn print_synthetic(rows: &[SynthRow]) {
    println!();
    println!("threads: {}", rayon::current_num_threads());
    for r in rows {
        let phases: Vec<String> = r
            .timings
            .scalar_phases
            .iter()
            .map(|(name, d)| format!("{name} {}", ms(*d)))
            .collect();
        println!(
            "2^{} {}: CPU scalar phases (ms): {}",
            r.log_n,
            r.mode,
            phases.join(", ")
        );
    }
    println!(
        "| size | mode | PCE ms | CPU scalars ms | tables ms | upload ms (host) | multiply ms | \
         download/convert ms (host) | total ms (PCE excluded) |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let t = &r.timings;
        println!(
            "| 2^{} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.log_n,
            r.mode,
            ms(r.pce),
            ms(t.scalars),
            ms(t.tables),
            ms(t.upload),
            ms(t.multiply),
            ms(t.download),
            ms(t.total)
        );
    }
    println!(
        "(gpu: multiply is the kernels' device time, overlapped with the host's upload and \
         download/convert; cpu: multiply is wall time)"
    );
}
