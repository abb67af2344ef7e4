//! `cuzk-bench prove`: the GPU prover on PoRep-shaped synthetic partitions (domain exactly
//! 2^k), from a witness to a verified proof: per-partition time, the phase table and the
//! GPU idle share, optionally under a VRAM budget (e.g. 16 GiB, a common card).
//!
//! First and steady partitions are reported apart: the first partition (the first timed one;
//! after `--warmup` proofs) and the steady figure, the median of partitions 3 and later (of
//! every partition after the first when there are two, the only one when there is one). Each
//! partition's line also says how many pinned buffers its preparation had to pin (pool
//! misses) and what the pool holds, so a slow first partition can be told apart from one
//! that pinned memory.

use anyhow::{ensure, Context, Result};
use cuzk_circuits::SyntheticPoRep;
use cuzk_cuda::Device;
use cuzk_groth16::{
    generate_parameters_with, prepare_verifying_key, verify_proof, PreparedParameters, ToxicWaste,
};
use cuzk_mem::{parse_size, Budget};
use cuzk_prover::{
    generate_parameters_gpu_config, resident_query_bytes, DeviceParameters, GpuParamgenConfig,
    GpuProver, GpuProverConfig, PreparedWitness, ProofTimings, Residency,
};
use cuzk_synth::synthesize_witness;
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::mpsc::sync_channel;
use std::sync::Arc;
use std::time::Instant;

/// Options of `cuzk-bench prove`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Domain sizes (log2) of the partitions.
    #[arg(long, value_delimiter = ',', default_value = "20,24,26,27")]
    logs: Vec<u32>,
    /// Partitions proved per size after the warm-up proofs (one PoRep C2 has ten).
    #[arg(long, default_value_t = 3)]
    partitions: usize,
    /// Proofs made and verified per size before the timed partitions (0: the first timed
    /// partition is the first proof at that size).
    #[arg(long, default_value_t = 0)]
    warmup: usize,
    /// Witness buffer sets pinned in the prover's pool when the parameters are placed, with
    /// the NTT tables and MSM work buffers (`GpuProver::warm`, timed apart from placement):
    /// this bench's pipeline holds three (one proving, one prepared, one being prepared).
    #[arg(long, default_value_t = 3)]
    prewarm: usize,
    /// Skip the NTT tables and MSM work buffers at placement (the first proof makes them).
    #[arg(long)]
    no_warm: bool,
    /// A VRAM budget such as `16GiB`: parameters stream when they do not fit it.
    #[arg(long)]
    budget: Option<String>,
    /// Capacity of the pinned host pool such as `24GiB` (default: half the host memory, at
    /// most 64 GiB); it bounds how many witnesses are prepared ahead.
    #[arg(long)]
    pinned: Option<String>,
    /// Make the parameters on the GPU (kept resident for the prover) or on the CPU.
    #[arg(long, default_value = "gpu", value_parser = ["gpu", "cpu"])]
    paramgen: String,
    /// Seed of the parameters and witnesses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where a, b, c are evaluated: on the `host` (the witness's a, b, c and MSM scalars
    /// uploaded) or on the `device` (the PCE placed there once, only the witness uploaded;
    /// host evaluation when the parameters are streamed).
    #[arg(long, default_value = "host", value_parser = ["host", "device"])]
    eval: String,
    /// Prepare each witness only after the previous proof has finished, so that the host
    /// phases (eval, scalars) run with the device idle: for comparing host-side figures
    /// between builds without the pipeline's overlap (the partition time then includes no
    /// overlap either).
    #[arg(long)]
    serial: bool,
    /// NTT pass factors of order up to 2^this from one table (`GpuProverConfig::
    /// ntt_direct_factor_log`; default: the engine's, 20); the working set counts the larger
    /// tables.
    #[arg(long)]
    direct_factor_log: Option<u32>,
    /// Batch-affine pair levels of every MSM (`GpuProverConfig::msm_affine_levels`; default 0,
    /// none).
    #[arg(long, default_value_t = 0)]
    affine_levels: u32,
    /// Place every MSM's pairs by the binned scatter where it fits
    /// (`GpuProverConfig::msm_binned_scatter` = `Some(true)`; by default each plan chooses).
    #[arg(long, conflicts_with = "one_pass_scatter")]
    binned_scatter: bool,
    /// Place every MSM's pairs by the one-pass scatter, never binned
    /// (`GpuProverConfig::msm_binned_scatter` = `Some(false)`).
    #[arg(long)]
    one_pass_scatter: bool,
    /// Under `--budget`, whether the device keeps the memory each proof frees mapped for the
    /// next (`GpuProverConfig::keep_freed_vram`); `false` unmaps it at every synchronisation.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    keep_freed_vram: bool,
    /// Shifted copies of the H bases for windows of this many bits where the device has room
    /// for them beside one proof (`GpuProverConfig::h_copy_bits`, `GpuProver::copy_h`; made
    /// at placement, timed apart; unmetered, host evaluation only: the copies leave no room
    /// for the device's PCE). Default: none.
    #[arg(long)]
    h_copy_bits: Option<u32>,
    /// Whether the MSMs of pinned scalars (L, A, B) run in two chunks, the second half's
    /// upload under the first half's work (`GpuProverConfig::msm_upload_overlap`): `off`
    /// (the prover's default), `on` wherever it fits, `auto` where each plan finds it pays.
    #[arg(long, default_value = "off", value_parser = ["auto", "on", "off"])]
    upload_overlap: String,
}

/// The targets at 2^27: one partition and ten.
const TARGET_PARTITION_MS: f64 = 1500.0;
const CEILING_PARTITION_MS: f64 = 2500.0;

pub fn run(args: &Args) -> Result<()> {
    ensure!(args.partitions >= 1, "--partitions must be at least 1");
    ensure!(
        args.h_copy_bits.is_none() || args.eval == "host",
        "--h-copy-bits needs --eval host: the copies leave no room for the device's PCE"
    );
    init_tracing();
    let device = Device::open(0).context("opening CUDA device 0")?;
    let budget = args
        .budget
        .as_deref()
        .map(|b| parse_size(b).map(|bytes| Budget::new("vram 0 (bench)", bytes)))
        .transpose()
        .context("parsing --budget")?;
    let mut rows = Vec::new();
    for &k in &args.logs {
        rows.push(one_size(&device, k, args, budget.clone())?);
    }
    println!();
    println!(
        "| log n | partitions | warm-up proofs | pre-warmed sets | resident | eval on | budget | first s | steady s | steady of | batch s | upload | ntt | msm h | msm l | msm a | msm b1 | msm b2 | eval | scalars | gather | free | witness up GB | idle share | params load s | pce place s | warm s | paramgen s | h copies |"
    );
    println!(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in &rows {
        println!("{r}");
    }
    println!(
        "first: the first timed partition; steady: the median of the partitions named (phase \
         columns are steady medians, ms; eval is host time with eval on the host, device time \
         on the device; scalars is host time)"
    );
    for &k in &args.logs {
        if k == 27 {
            println!(
                "targets at 2^27: one partition <= {TARGET_PARTITION_MS} ms (ceiling {CEILING_PARTITION_MS} ms), idle share <= 10%"
            );
        }
    }
    Ok(())
}

fn one_size(device: &Device, k: u32, args: &Args, budget: Option<Budget>) -> Result<String> {
    let n = (1usize << k) - 2;
    let circuit = SyntheticPoRep::new(n, args.seed);
    let t = Instant::now();
    let pce = circuit.pce();
    let density = pce.density();
    eprintln!("2^{k}: evaluator {:.1} s", t.elapsed().as_secs_f64());

    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let toxic = ToxicWaste::random(&mut rng);
    let config = GpuProverConfig {
        budget: budget.clone(),
        residency: Residency::Auto,
        pinned_bytes: args
            .pinned
            .as_deref()
            .map(parse_size)
            .transpose()
            .context("parsing --pinned")?,
        keep_freed_vram: args.keep_freed_vram,
        ntt_direct_factor_log: args.direct_factor_log,
        msm_affine_levels: args.affine_levels,
        msm_binned_scatter: match (args.binned_scatter, args.one_pass_scatter) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        h_copy_bits: args.h_copy_bits,
        msm_upload_overlap: crate::gpu_msm::overlap_arg(&args.upload_overlap),
        ..GpuProverConfig::default()
    };
    let prover = GpuProver::new(device, config)?;
    let t = Instant::now();
    // On the GPU the points stay on the device for the prover when there is no budget to
    // respect and they fit beside one proof's working set; otherwise (and on the CPU) they are
    // placed by the prover's load, which streams them when they do not fit.
    let domain = 1usize << k;
    let query_bytes = resident_query_bytes(&pce, &density, domain);
    let (free, _) = device.memory_info()?;
    let fits = query_bytes + prover.working_set_bytes(domain)? <= free as u64;
    if args.paramgen == "gpu" && budget.is_none() && !fits {
        eprintln!(
            "2^{k}: the queries ({:.1} GB) and one proof's working set do not fit the device's \
             {:.1} GB free: parameters placed by the prover",
            query_bytes as f64 / 1e9,
            free as f64 / 1e9
        );
    }
    let keep = args.paramgen == "gpu" && budget.is_none() && fits;
    let (pvk, mut dev_params, paramgen_s, load_s) = if args.paramgen == "gpu" {
        let generated = generate_parameters_gpu_config(
            device,
            &pce,
            &toxic,
            &GpuParamgenConfig {
                keep_on_device: keep,
                ..GpuParamgenConfig::default()
            },
        )
        .context("GPU parameter generation")?;
        let paramgen_s = t.elapsed().as_secs_f64();
        eprintln!(
            "2^{k}: parameters on the GPU {paramgen_s:.1} s ({:?})",
            generated.timings
        );
        let pvk = prepare_verifying_key(&generated.params.vk);
        let t = Instant::now();
        let dev_params = match generated.on_device {
            Some(q) => DeviceParameters::adopt(device, &generated.params, q, None)?,
            None => prover.load(Arc::new(PreparedParameters::from(generated.params)))?,
        };
        (pvk, dev_params, paramgen_s, t.elapsed().as_secs_f64())
    } else {
        let params = generate_parameters_with(&pce, &toxic).context("parameter generation")?;
        let paramgen_s = t.elapsed().as_secs_f64();
        eprintln!("2^{k}: parameters on the CPU {paramgen_s:.1} s");
        let pvk = prepare_verifying_key(&params.vk);
        let t = Instant::now();
        let dev_params = prover.load(Arc::new(PreparedParameters::from(params)))?;
        (pvk, dev_params, paramgen_s, t.elapsed().as_secs_f64())
    };
    eprintln!(
        "2^{k}: parameters placed in {load_s:.1} s (resident: {})",
        dev_params.is_resident()
    );
    // Adopted parameters get their copies here; loaded ones got them in `load` (then this
    // reports them). As in `load`, a failure to make them leaves the bases alone: the proofs
    // are the same, only slower.
    let h_copies = prover.copy_h(&mut dev_params).unwrap_or_else(|e| {
        eprintln!("2^{k}: no copies of the H bases: {e}");
        cuzk_prover::HCopies {
            copies: 1,
            skipped: Some("making them failed"),
            ..cuzk_prover::HCopies::default()
        }
    });
    let copies_col = match h_copies.skipped {
        None => format!("{} x {} bits", h_copies.copies, h_copies.bits),
        Some(_) => "none".to_string(),
    };
    eprintln!(
        "2^{k}: H copies: {} ({:.1} GiB beyond the bases, {:.2} s{})",
        copies_col,
        h_copies.bytes as f64 / (1u64 << 30) as f64,
        h_copies.ms / 1e3,
        h_copies
            .skipped
            .map(|w| format!("; none: {w}"))
            .unwrap_or_default()
    );
    let t = Instant::now();
    // With the evaluation on the device a witness takes only the packed form's bit buffers
    // from the pool: those are what the sets stock (as the daemon's backend does).
    let witness_only = args.eval == "device" && dev_params.is_resident();
    let (prewarmed, warm_note) = if args.no_warm {
        (
            prover
                .prewarm_buffers(&dev_params, args.prewarm, witness_only)?
                .0,
            "sets only".to_string(),
        )
    } else {
        let mut w = prover.warm(&dev_params, if witness_only { 0 } else { args.prewarm })?;
        if witness_only {
            let t = Instant::now();
            (w.sets, w.buffers) = prover.prewarm_buffers(&dev_params, args.prewarm, true)?;
            w.pinned_ms = t.elapsed().as_secs_f64() * 1e3;
        }
        let note = format!(
            "{} pinned {}buffers in {:.1} s, NTT tables {:.2} s, MSM buffers {:.1} GiB in {:.2} s",
            w.buffers,
            if witness_only { "witness bit " } else { "" },
            w.pinned_ms / 1e3,
            w.tables_ms / 1e3,
            w.workspace_bytes as f64 / (1u64 << 30) as f64,
            w.workspaces_ms / 1e3
        );
        (w.sets, note)
    };
    let prewarm_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let device_pce = if args.eval == "device" && dev_params.is_resident() {
        Some(Arc::new(prover.place_pce(&pce, &density)?))
    } else {
        None
    };
    let pce_s = t.elapsed().as_secs_f64();
    if let Some(dp) = &device_pce {
        eprintln!(
            "2^{k}: PCE on the device in {pce_s:.2} s ({:.2} GiB)",
            dp.bytes() as f64 / (1u64 << 30) as f64
        );
    }
    eprintln!(
        "2^{k}: warmed in {prewarm_s:.1} s: {prewarmed} of {} pinned witness sets; {warm_note}",
        args.prewarm
    );

    // Warm-up: caches, pools and tables of this size.
    for i in 0..args.warmup {
        let seed_w = args.seed ^ (0xffff + i as u64);
        let w = synthesize_witness(SyntheticPoRep::new(n, seed_w))?;
        let (proof, _) = prover.prove(
            &dev_params,
            &pce,
            &density,
            &w,
            Field::random(&mut rng),
            Field::random(&mut rng),
        )?;
        ensure!(
            verify_proof(
                &pvk,
                &proof,
                &SyntheticPoRep::new(n, seed_w).public_inputs()
            )?,
            "warm-up proof at 2^{k} does not verify"
        );
    }

    // The partitions: witnesses made and prepared on one thread while the device proves.
    let start = Instant::now();
    let mut timings: Vec<ProofTimings> = Vec::new();
    // Pool misses (buffers pinned) while each partition was prepared, and bytes pinned after.
    let mut pinning: Vec<(u64, u64)> = Vec::new();
    // When each witness's synthesis started, its preparation started and ended, and when its
    // proof started and ended: ms since `start`.
    let mut clocks: Vec<([f64; 3], [f64; 2])> = Vec::new();
    // MSM workspaces each proof allocated (none once warm-up's buffers serve every plan).
    let mut allocs: Vec<u64> = Vec::new();
    let since = |start: Instant| start.elapsed().as_secs_f64() * 1e3;
    std::thread::scope(|s| -> Result<()> {
        type Made = (PreparedWitness, u64, (u64, u64), [f64; 3]);
        let (tx, rx) = sync_channel::<Result<Made>>(1);
        // With --serial, one token per finished proof lets the next witness start.
        let (done_tx, done_rx) = sync_channel::<()>(args.partitions);
        let (prover, dev_params, pce, density) = (&prover, &dev_params, &pce, &density);
        let device_pce = device_pce.as_ref();
        let (partitions, seed, serial) = (args.partitions, args.seed, args.serial);
        s.spawn(move || {
            for i in 0..partitions {
                if serial && i > 0 && done_rx.recv().is_err() {
                    break;
                }
                let seed_i = seed.wrapping_add(1 + i as u64);
                let misses = prover.pinned_pool().stats().misses;
                let mut at = [since(start), 0.0, 0.0];
                let prepared = synthesize_witness(SyntheticPoRep::new(n, seed_i))
                    .map_err(anyhow::Error::from)
                    .and_then(|w| {
                        at[1] = since(start);
                        Ok(prover.prepare_with(dev_params, pce, density, device_pce, &w)?)
                    });
                at[2] = since(start);
                let after = prover.pinned_pool().stats();
                let pinned = (after.misses - misses, after.pinned_bytes);
                if tx.send(prepared.map(|p| (p, seed_i, pinned, at))).is_err() {
                    break;
                }
            }
        });
        for _ in 0..args.partitions {
            let (mut prepared, seed_i, pinned, made_at) =
                rx.recv().context("preparing thread ended")??;
            pinning.push(pinned);
            let (r, s2) = (Field::random(&mut rng), Field::random(&mut rng));
            let proved_from = since(start);
            let allocs_before = prover.msm_workspace_allocations();
            let (proof, t) = prover.prove_prepared(dev_params, &mut prepared, r, s2)?;
            allocs.push(prover.msm_workspace_allocations() - allocs_before);
            clocks.push((made_at, [proved_from, since(start)]));
            ensure!(
                verify_proof(
                    &pvk,
                    &proof,
                    &SyntheticPoRep::new(n, seed_i).public_inputs()
                )?,
                "a proof at 2^{k} does not verify"
            );
            timings.push(t);
            // The preparing thread may have ended early on an error, which recv reports.
            let _ = done_tx.send(());
        }
        Ok(())
    })?;
    let batch_s = start.elapsed().as_secs_f64();
    // Steady: partitions 3 and later (1-based), else every one after the first, else it.
    let (steady, steady_of) = match timings.len() {
        1 => (&timings[..], "1".to_string()),
        2 => (&timings[1..], "2".to_string()),
        len => (&timings[2..], format!("3-{len}")),
    };
    let med = |f: fn(&ProofTimings) -> f64| -> f64 {
        let mut v: Vec<f64> = steady.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (i, (((t, (misses, pinned)), (made, proved)), allocs)) in timings
        .iter()
        .zip(&pinning)
        .zip(&clocks)
        .zip(&allocs)
        .enumerate()
    {
        let phases: Vec<String> = t
            .phases()
            .iter()
            .map(|(n, ms)| format!("{n}={ms:.1}"))
            .collect();
        eprintln!(
            "2^{k} partition {}: prove={:.1} {} idle={:.1}% pinned_now={misses} pool={:.1}GiB \
             msm_allocations={allocs} synthesized_at={:.0}-{:.0} prepared_by={:.0} proved_at={:.0}-{:.0}",
            i + 1,
            t.prove_ms,
            phases.join(" "),
            100.0 * t.idle_share(),
            *pinned as f64 / (1u64 << 30) as f64,
            made[0],
            made[1],
            made[2],
            proved[0],
            proved[1],
        );
    }
    let per_partition = med(|t| t.prove_ms);
    let first = timings[0].prove_ms;
    let budget_col = budget
        .map(|b| format!("{:.0} GiB", b.capacity() as f64 / (1u64 << 30) as f64))
        .unwrap_or_else(|| "none".into());
    Ok(format!(
        "| {k} | {} | {} | {prewarmed} | {} | {} | {budget_col} | {:.3} | {:.3} | {steady_of} | {batch_s:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1}% | {load_s:.1} | {pce_s:.2} | {prewarm_s:.1} | {paramgen_s:.1} | {copies_col} |",
        args.partitions,
        args.warmup,
        dev_params.is_resident(),
        if steady.iter().all(|t| t.eval_on_device) { "device" } else { "host" },
        first / 1e3,
        per_partition / 1e3,
        med(|t| t.upload_ms),
        med(|t| t.ntt_ms),
        med(|t| t.msm_h_ms),
        med(|t| t.msm_l_ms),
        med(|t| t.msm_a_ms),
        med(|t| t.msm_b_g1_ms),
        med(|t| t.msm_b_g2_ms),
        med(|t| t.eval_ms),
        med(|t| t.scalars_ms),
        med(|t| t.gather_ms),
        med(|t| t.free_ms),
        med(|t| t.witness_upload_bytes as f64) / 1e9,
        100.0 * med(|t| t.idle_share()),
    ))
}

/// The prover's placement and memory decisions on stderr (`RUST_LOG` overrides the filter:
/// `cuzk_prover=debug,cuzk_msm=debug` shows every MSM's plan and each proof's allowances).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,cuzk_prover=info"));
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .finish();
    let _ = tracing::subscriber::set_global_default(subscriber);
}
