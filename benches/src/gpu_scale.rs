//! `cuzk-bench scale`: the GPU side alone on one and several GPUs. Each GPU gets the same
//! parameters (made once on the first GPU, uploaded to the others) and one PoRep-shaped
//! witness prepared once into its pinned pool; then every GPU proves its witness over and over
//! (fresh r, s each time, every proof verified) at the same time as the others. Throughput
//! with N GPUs against one says how the proving side scales when synthesis is not in the loop
//! (replayed inputs); the daemon's sweep (`run-sweep`) measures it with synthesis.

use crate::stats::rss_peak_gib;
use anyhow::{ensure, Context, Result};
use cuzk_circuits::SyntheticPoRep;
use cuzk_cuda::Device;
use cuzk_groth16::{prepare_verifying_key, verify_proof, PreparedParameters, ToxicWaste};
use cuzk_mem::parse_size;
use cuzk_prover::{
    generate_parameters_gpu_config, DeviceParameters, GpuParamgenConfig, GpuProver,
    GpuProverConfig, PreparedWitness,
};
use cuzk_synth::{Density, Pce};
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Instant;

/// Options of `cuzk-bench scale`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Domain sizes (log2) of the partitions.
    #[arg(long, value_delimiter = ',', default_value = "26,27")]
    logs: Vec<u32>,
    /// GPU counts to measure (the first N devices each time), e.g. `1,2`.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    gpus: Vec<usize>,
    /// Proofs per GPU per measurement, after one warm-up proof per GPU.
    #[arg(long, default_value_t = 4)]
    rounds: usize,
    /// Pinned host pool per GPU such as `32GiB` (default: the prover's).
    #[arg(long)]
    pinned: Option<String>,
    /// Seed of the parameters, witnesses and randomness.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// One GPU ready to prove: its prover, its copy of the parameters, its prepared witness.
struct Lane {
    prover: GpuProver,
    params: DeviceParameters,
    witness: PreparedWitness,
    inputs: Vec<cuzk_field::Scalar>,
}

struct Row {
    log: u32,
    gpus: usize,
    proofs: usize,
    wall_s: f64,
    busy: Vec<f64>,
    rss_gib: f64,
}

pub fn run(args: &Args) -> Result<()> {
    ensure!(args.rounds >= 1, "--rounds must be at least 1");
    ensure!(
        !args.gpus.is_empty() && args.gpus.iter().all(|&g| g >= 1),
        "--gpus must list counts of at least 1"
    );
    let available = cuzk_cuda::device_count().context("counting CUDA devices")?;
    let most = *args.gpus.iter().max().expect("not empty");
    ensure!(
        most <= available,
        "--gpus asks for {most} GPUs; the driver reports {available}"
    );
    let pinned = args
        .pinned
        .as_deref()
        .map(parse_size)
        .transpose()
        .context("parsing --pinned")?;
    let mut rows = Vec::new();
    for &k in &args.logs {
        rows.extend(one_size(k, most, args, pinned)?);
    }
    println!();
    println!("| log n | GPUs | proofs | wall s | s/proof | throughput vs 1 GPU | per-GPU busy share | host RSS peak GiB |");
    println!("|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let base = rows
            .iter()
            .find(|b| b.log == r.log && b.gpus == 1)
            .map(|b| b.wall_s / b.proofs as f64);
        let spp = r.wall_s / r.proofs as f64;
        let busy: Vec<String> = r
            .busy
            .iter()
            .map(|b| format!("{:.0}%", 100.0 * b))
            .collect();
        println!(
            "| {} | {} | {} | {:.2} | {:.3} | {} | {} | {:.1} |",
            r.log,
            r.gpus,
            r.proofs,
            r.wall_s,
            spp,
            base.map_or("-".into(), |b| format!(
                "{:.2}× ({:.0}% of linear)",
                b / spp,
                100.0 * b / spp / r.gpus as f64
            )),
            busy.join(", "),
            r.rss_gib
        );
    }
    Ok(())
}

fn one_size(k: u32, most: usize, args: &Args, pinned: Option<u64>) -> Result<Vec<Row>> {
    let n = (1usize << k) - 2;
    let t = Instant::now();
    let pce = SyntheticPoRep::new(n, args.seed).pce();
    let density = pce.density();
    eprintln!("scale 2^{k}: evaluator {:.1} s", t.elapsed().as_secs_f64());
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let toxic = ToxicWaste::random(&mut rng);

    let first = Device::open(0).context("opening CUDA device 0")?;
    let t = Instant::now();
    let generated = generate_parameters_gpu_config(
        &first,
        &pce,
        &toxic,
        &GpuParamgenConfig {
            keep_on_device: true,
            ..GpuParamgenConfig::default()
        },
    )
    .context("GPU parameter generation")?;
    eprintln!(
        "scale 2^{k}: parameters on GPU 0 in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let pvk = prepare_verifying_key(&generated.params.vk);
    let config = GpuProverConfig {
        pinned_bytes: pinned,
        ..GpuProverConfig::default()
    };
    let mut lanes = Vec::with_capacity(most);
    let first_params = match generated.on_device {
        Some(q) => DeviceParameters::adopt(&first, &generated.params, q, None)?,
        None => GpuProver::new(&first, config.clone())?
            .load(Arc::new(PreparedParameters::from(generated.params.clone())))?,
    };
    let host = Arc::new(PreparedParameters::from(generated.params));
    for ordinal in 0..most {
        let device = if ordinal == 0 {
            first.clone()
        } else {
            Device::open(ordinal)?
        };
        let prover = GpuProver::new(&device, config.clone())?;
        let t = Instant::now();
        let params = if ordinal == 0 {
            None
        } else {
            Some(prover.load(Arc::clone(&host))?)
        };
        if ordinal > 0 {
            eprintln!(
                "scale 2^{k}: parameters uploaded to GPU {ordinal} in {:.1} s",
                t.elapsed().as_secs_f64()
            );
        }
        lanes.push((prover, params, ordinal));
    }
    drop(host);
    let mut ready = Vec::with_capacity(most);
    let mut first_params = Some(first_params);
    for (prover, params, ordinal) in lanes {
        let params = match params {
            Some(p) => p,
            None => first_params.take().expect("device 0's parameters"),
        };
        let ready_lane = prepare_lane(
            prover,
            params,
            &pce,
            &density,
            n,
            args.seed + 100 + ordinal as u64,
        )?;
        ready.push(ready_lane);
    }

    // Warm-up: one proof per GPU (pools, tables, the MSM work buffers).
    let mut rows = Vec::new();
    prove_all(&mut ready, 1, &pvk, args.seed)?;
    for &gpus in &args.gpus {
        let lanes = &mut ready[..gpus];
        let start = Instant::now();
        let busy_ms = prove_all(
            lanes,
            args.rounds,
            &pvk,
            args.seed.wrapping_add(gpus as u64),
        )?;
        let wall = start.elapsed().as_secs_f64();
        let rss = rss_peak_gib();
        eprintln!(
            "scale 2^{k}: {gpus} GPU(s): {} proofs in {wall:.2} s",
            gpus * args.rounds
        );
        rows.push(Row {
            log: k,
            gpus,
            proofs: gpus * args.rounds,
            wall_s: wall,
            busy: busy_ms.iter().map(|b| b / 1e3 / wall).collect(),
            rss_gib: rss,
        });
    }
    Ok(rows)
}

fn prepare_lane(
    prover: GpuProver,
    params: DeviceParameters,
    pce: &Pce,
    density: &Density,
    n: usize,
    seed: u64,
) -> Result<Lane> {
    let circuit = SyntheticPoRep::new(n, seed);
    let w = pce.synthesize_witness(circuit)?;
    let witness = prover.prepare(&params, pce, density, &w)?;
    Ok(Lane {
        prover,
        params,
        witness,
        inputs: circuit.public_inputs(),
    })
}

/// Every lane proves its witness `rounds` times, the lanes at once (one thread each); every
/// proof is verified. Returns each lane's GPU busy milliseconds.
fn prove_all(
    lanes: &mut [Lane],
    rounds: usize,
    pvk: &cuzk_groth16::PreparedVerifyingKey,
    seed: u64,
) -> Result<Vec<f64>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter_mut()
            .enumerate()
            .map(|(i, lane)| {
                s.spawn(move || -> Result<f64> {
                    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (i as u64 + 1) << 32);
                    let mut busy = 0.0;
                    for _ in 0..rounds {
                        let (r, s2) = (Field::random(&mut rng), Field::random(&mut rng));
                        let (proof, t) =
                            lane.prover
                                .prove_prepared(&lane.params, &mut lane.witness, r, s2)?;
                        ensure!(
                            verify_proof(pvk, &proof, &lane.inputs)?,
                            "a proof on GPU {i} does not verify"
                        );
                        busy += t.gpu_busy_ms;
                    }
                    Ok(busy)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a proving thread panicked"))?
            })
            .collect()
    })
}
