//! `cuzk-bench msm`: the GPU MSM engine on device-resident bases (generated on the device from a
//! seed) with scalars streamed from pinned memory, G1 at 2^20 … 2^27 and G2 at 2^20 … 2^24,
//! timed as sppark's figures were (wall clock of the whole call, result on the host), against
//! those figures and the targets; plus device-resident scalars and witness-shaped
//! sparse scalars, batches of scalar sets against the same bases, bases streamed from pinned
//! host memory under a VRAM allowance, and optionally a sweep of window widths.

use crate::stats::median;
use anyhow::{ensure, Context, Result};
use cuzk_cuda::{Device, PinnedBuffer, Stream};
use cuzk_field::FrRepr;
use cuzk_msm::gpu::{
    Bases, HostBases, MsmConfig, MsmEngine, Scalars, Split, GEN_POINTS_PER_THREAD,
};
use cuzk_msm::testing::{generated_msm, random_scalars, sparse_scalars, to_reprs};
use cuzk_msm::{digits, MsmCurve, G1, G2};
use std::time::{Duration, Instant};

/// Options of `cuzk-bench msm`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Timed runs per measurement (after one warm-up); the median is reported. At least 3.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Sizes (log2) of the G1 measurements (0 is skipped: `--g1 0` times no G1).
    #[arg(long, value_delimiter = ',', default_value = "20,22,24,26,27")]
    g1: Vec<u32>,
    /// Sizes (log2) of the G2 measurements (0 is skipped: `--g2 0` times no G2).
    #[arg(long, value_delimiter = ',', default_value = "20,22,24")]
    g2: Vec<u32>,
    /// log2 size of the witness-shaped sparse G1 measurement (0 skips it).
    #[arg(long, default_value_t = 27)]
    sparse: u32,
    /// log2 size of the device-resident scalars comparison (0 skips it).
    #[arg(long, default_value_t = 26)]
    resident: u32,
    /// log2 size of the batched G1 measurement (0 skips it).
    #[arg(long, default_value_t = 26)]
    batch: u32,
    /// Scalar sets of the batched measurement.
    #[arg(long, default_value_t = 4)]
    batch_sets: usize,
    /// log2 size of the G1 measurement with bases streamed from pinned host memory (0 skips it).
    #[arg(long, default_value_t = 24)]
    streamed: u32,
    /// VRAM allowance of the host-streamed bases measurement, in GiB.
    #[arg(long, default_value_t = 2)]
    streamed_gib: usize,
    /// Also time every window width near the default at these G1 sizes (log2).
    #[arg(long, value_delimiter = ',')]
    sweep_g1: Vec<u32>,
    /// Also time every window width near the default at these G2 sizes (log2).
    #[arg(long, value_delimiter = ',')]
    sweep_g2: Vec<u32>,
    /// Also time every --g1 and --g2 size with these numbers of batch-affine pair levels
    /// (comma-separated; `MsmConfig::affine_levels`; 0 times the plain accumulation), each
    /// checked like the default row, whose levels the plan chooses.
    #[arg(long, value_delimiter = ',')]
    affine_levels: Vec<u32>,
    /// Most windows per pair-level launch to time each of --affine-levels with
    /// (comma-separated; `MsmConfig::pair_group`, 0: as many as fit).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pair_groups: Vec<u32>,
    /// Also time every --g1 and --g2 size with the binned scatter (`MsmConfig::binned_scatter`
    /// = `Some(true)`), alone and with each of --affine-levels.
    #[arg(long)]
    binned_scatter: bool,
    /// Also time every --g1 and --g2 size with the one-pass scatter (`MsmConfig::binned_scatter`
    /// = `Some(false)`), alone and with each of --affine-levels.
    #[arg(long)]
    one_pass_scatter: bool,
    /// Sizes (log2) of G1 MSMs over shifted copies of their bases (`MsmEngine::shift_bases`,
    /// as many copies as fit beside the call): each with every --shift-bits width; the
    /// copies' making is timed and their VRAM reported apart from the call (0 skips them).
    #[arg(long, value_delimiter = ',', default_value = "26,27")]
    shifted: Vec<u32>,
    /// Window widths of the --shifted measurements.
    #[arg(long, value_delimiter = ',', default_value = "22,24")]
    shift_bits: Vec<u32>,
    /// log2 size of G1 MSMs with device-resident scalars run under each --chunk-gib
    /// allowance (0 skips them): what cutting one MSM into more chunks costs, phase by phase.
    #[arg(long, default_value_t = 0)]
    chunked: u32,
    /// VRAM allowances (GiB) of the --chunked measurements; each row reports its chunks.
    #[arg(long, value_delimiter = ',', default_value = "40,16,11")]
    chunk_gib: Vec<usize>,
    /// Whether one-chunk MSMs of pinned scalars run in two chunks, the second half's upload
    /// under the first half's sort and accumulation (`MsmConfig::upload_overlap`): `auto`
    /// (the plan decides, the engine's default), `on` wherever it fits, `off`.
    #[arg(long, default_value = "auto", value_parser = ["auto", "on", "off"])]
    upload_overlap: String,
    /// Seed of the bases and scalars.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// `MsmConfig::upload_overlap` for an `--upload-overlap` value (`auto`, `on`, `off`).
pub fn overlap_arg(value: &str) -> Option<bool> {
    match value {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// sppark on this H200, bases resident, scalars from pinned memory (shared/gpu.md, 2026-11-29).
fn sppark_ms(group: &str, log_n: u32) -> Option<f64> {
    match (group, log_n) {
        ("g1", 20) => Some(22.5),
        ("g1", 22) => Some(54.7),
        ("g1", 24) => Some(162.0),
        ("g1", 26) => Some(568.0),
        ("g1", 27) => Some(1110.0),
        ("g2", 20) => Some(49.0),
        ("g2", 22) => Some(141.0),
        ("g2", 24) => Some(460.0),
        _ => None,
    }
}

/// The targets (its goals, beyond them: G1 2^26 350 ms, 2^27 700 ms).
fn target_ms(group: &str, log_n: u32) -> Option<f64> {
    match (group, log_n) {
        ("g1", 26) => Some(420.0),
        ("g1", 27) => Some(820.0),
        ("g2", 24) => Some(300.0),
        _ => None,
    }
}

/// The arithmetic floor: n·⌈256/c⌉ mixed additions at 2.8·10^9 per second for G1 (8M + 2S of
/// ≈ 600 multiply-adds each at 16.7·10^12 per second), three times that time for G2 (an Fp2
/// product is three Fp products).
fn floor_ms(group: &str, log_n: u32) -> f64 {
    let n = (1u64 << log_n) as f64;
    let xyzz = if group == "g1" { 192 } else { 384 };
    let windows = digits::window_count(cuzk_msm::plan::window_bits(1 << log_n, xyzz)) as f64;
    let per_s = if group == "g1" { 2.8e9 } else { 2.8e9 / 3.0 };
    n * windows / per_s * 1e3
}

struct Row {
    what: String,
    ours: Duration,
    sppark: Option<f64>,
    target: Option<f64>,
    floor: Option<f64>,
}

/// Wall time of `work` (which returns once its result is on the host): median of `runs` after
/// one warm-up.
fn time(runs: usize, mut work: impl FnMut(usize) -> Result<()>) -> Result<Duration> {
    debug_assert!(runs > 0);
    work(usize::MAX)?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        let t = Instant::now();
        work(i)?;
        samples.push(t.elapsed());
    }
    Ok(median(&samples))
}

struct Ctx {
    device: Device,
    stream: Stream,
    engine: MsmEngine,
    seed: u64,
    runs: usize,
    affine_levels: Vec<u32>,
    pair_groups: Vec<u32>,
    /// The placements to time besides the plan's own: `Some(true)` binned, `Some(false)` one
    /// pass.
    scatters: Vec<bool>,
    /// `MsmConfig::upload_overlap` of every measurement (`--upload-overlap`).
    upload_overlap: Option<bool>,
}

impl Ctx {
    /// Times the MSM of the first `n` bases with scalars `pinned[off..off + n]`, a different
    /// offset each run so that every run sees fresh scalars; checks one result.
    fn measure<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        pinned: &PinnedBuffer<FrRepr>,
        host: &[cuzk_field::Scalar],
        n: usize,
        cfg: &MsmConfig,
    ) -> Result<Duration> {
        let cfg = &MsmConfig {
            upload_overlap: cfg.upload_overlap.or(self.upload_overlap),
            ..*cfg
        };
        let spare = pinned.len() - n;
        let offset = |i: usize| window(i, spare);
        let t = time(self.runs, |i| {
            let off = offset(i);
            self.engine.msm_with(
                &self.stream,
                bases,
                Scalars::PinnedRange(pinned, off..off + n),
                cfg,
            )?;
            Ok(())
        })?;
        let off = offset(0);
        let (got, info) = self.engine.msm_with(
            &self.stream,
            bases,
            Scalars::PinnedRange(pinned, off..off + n),
            &MsmConfig {
                profile: true,
                ..*cfg
            },
        )?;
        let want = generated_msm::<C>(&host[off..off + n], self.seed, GEN_POINTS_PER_THREAD);
        ensure!(
            got == want,
            "{} MSM of {n} points disagrees with the check",
            C::NAME
        );
        eprintln!(
            "    {} n = {n}: {:.3} ms; c = {}, {} chunk(s) × {} pass(es), split {}",
            C::NAME,
            t.as_secs_f64() * 1e3,
            info.plan.bits,
            info.plan.chunks(n),
            info.plan.passes(),
            info.split
        );
        for (phase, ms) in &info.phases {
            eprintln!("      {phase:<28} {ms:>9.3} ms");
        }
        if info.plan.copies > 1 {
            eprintln!(
                "      over {} shifted copies: {} bucket set(s) of 2^{}",
                info.plan.copies,
                info.plan.windows,
                info.plan.bits - 1
            );
        }
        if info.plan.affine_levels > 0 {
            eprintln!(
                "      with {} pair level(s), {} window(s) per launch",
                info.plan.affine_levels, info.plan.pair_group
            );
        }
        let binned = info.plan.bin_windows > 0;
        if binned {
            eprintln!(
                "      with the binned scatter: {} window(s) a group, 2^{} keys a bin",
                info.plan.bin_windows, info.plan.bin_shift
            );
        }
        let asked = cfg.affine_levels.unwrap_or(info.plan.affine_levels);
        let asked_bins = cfg.binned_scatter.unwrap_or(binned);
        if (info.plan.affine_levels, binned) != (asked, asked_bins) {
            eprintln!(
                "      NOTE: asked for {asked} pair level(s), binned scatter {asked_bins}; the plan runs {}, {binned} (VRAM)",
                info.plan.affine_levels
            );
        }
        Ok(t)
    }

    fn group<C: MsmCurve>(
        &self,
        sizes: &[u32],
        sweep: &[u32],
        host: &[cuzk_field::Scalar],
        pinned: &PinnedBuffer<FrRepr>,
        rows: &mut Vec<Row>,
    ) -> Result<()> {
        // A size of 0 skips the group, as with the other size options.
        let sizes: Vec<u32> = sizes.iter().copied().filter(|&l| l > 0).collect();
        let sweep: Vec<u32> = sweep.iter().copied().filter(|&l| l > 0).collect();
        let (sizes, sweep) = (&sizes[..], &sweep[..]);
        let max = sizes.iter().chain(sweep).copied().max().unwrap_or(0);
        if sizes.is_empty() && sweep.is_empty() {
            return Ok(());
        }
        let t = Instant::now();
        let bases = self
            .engine
            .generate_bases::<C>(&self.stream, 1 << max, self.seed)?;
        self.stream.synchronize()?;
        eprintln!(
            "==> {} bases 2^{max} generated on the device in {:.2} s",
            C::NAME,
            t.elapsed().as_secs_f64()
        );
        let dense = MsmConfig {
            split: Split::Dense,
            ..MsmConfig::default()
        };
        for &log_n in sweep {
            let n = 1usize << log_n;
            let default = cuzk_msm::plan::window_bits(n, std::mem::size_of::<C::XyzzRepr>());
            let mut best = (0, Duration::MAX);
            for bits in
                default.saturating_sub(2).max(4)..=(default + 2).min(digits::MAX_WINDOW_BITS)
            {
                let cfg = MsmConfig {
                    window_bits: Some(bits),
                    ..dense
                };
                // One warm-up and two runs: enough to rank widths, cheap enough to sweep.
                let t = time(2, |_| {
                    self.engine.msm_with(
                        &self.stream,
                        &bases,
                        Scalars::PinnedRange(pinned, 0..n),
                        &cfg,
                    )?;
                    Ok(())
                })?;
                eprintln!(
                    "    sweep {} 2^{log_n} c = {bits}: {:.3} ms",
                    C::NAME,
                    t.as_secs_f64() * 1e3
                );
                if t < best.1 {
                    best = (bits, t);
                }
                rows.push(Row {
                    what: format!("sweep {} 2^{log_n} c = {bits}", C::NAME),
                    ours: t,
                    sppark: sppark_ms(C::NAME, log_n),
                    target: None,
                    floor: None,
                });
            }
            eprintln!(
                "    sweep {} 2^{log_n}: best c = {} ({:.3} ms), default {default}",
                C::NAME,
                best.0,
                best.1.as_secs_f64() * 1e3
            );
        }
        for &log_n in sizes {
            let t = self.measure::<C>(&bases, pinned, host, 1 << log_n, &dense)?;
            rows.push(Row {
                what: format!("{} 2^{log_n}", C::NAME.to_uppercase()),
                ours: t,
                sppark: sppark_ms(C::NAME, log_n),
                target: target_ms(C::NAME, log_n),
                floor: Some(floor_ms(C::NAME, log_n)),
            });
            // The variants asked for: pair levels alone, each placement alone, and both.
            // Each pair-level count with each group cap.
            // (Without levels the group cap changes nothing: one run.)
            let with_groups = |scatter: Option<bool>| {
                self.affine_levels.iter().flat_map(move |&l| {
                    let groups: &[u32] = if l == 0 { &[0] } else { &self.pair_groups };
                    groups.iter().map(move |&g| (Some(l), g, scatter))
                })
            };
            let mut variants: Vec<(Option<u32>, u32, Option<bool>)> = with_groups(None).collect();
            for &binned in &self.scatters {
                variants.push((dense.affine_levels, 0, Some(binned)));
                variants.extend(with_groups(Some(binned)));
            }
            for (levels, group, scatter) in variants {
                let cfg = MsmConfig {
                    affine_levels: levels,
                    pair_group: group,
                    binned_scatter: scatter.or(dense.binned_scatter),
                    ..dense
                };
                let t = self.measure::<C>(&bases, pinned, host, 1 << log_n, &cfg)?;
                let mut what = format!("{} 2^{log_n}", C::NAME.to_uppercase());
                match levels {
                    None => {}
                    Some(0) => what += ", no pair levels",
                    Some(levels) => {
                        what += &format!(", {levels} pair level(s)");
                        if group > 0 {
                            what += &format!(" ≤ {group} window(s)/launch");
                        }
                    }
                }
                match scatter {
                    Some(true) => what += ", binned scatter",
                    Some(false) => what += ", one-pass scatter",
                    None => {}
                }
                rows.push(Row {
                    what,
                    ours: t,
                    sppark: sppark_ms(C::NAME, log_n),
                    target: target_ms(C::NAME, log_n),
                    floor: Some(floor_ms(C::NAME, log_n)),
                });
            }
        }
        Ok(())
    }
}

pub fn run(args: &Args) -> Result<()> {
    ensure!(
        args.runs >= 3,
        "--runs must be at least 3 (got {})",
        args.runs
    );
    let device = Device::open(0).context("opening GPU 0")?;
    eprintln!("==> {}", device.info());
    let ctx = Ctx {
        stream: device.new_stream()?,
        engine: MsmEngine::new(&device)?,
        device,
        seed: args.seed,
        runs: args.runs,
        upload_overlap: overlap_arg(&args.upload_overlap),
        affine_levels: args.affine_levels.clone(),
        pair_groups: args.pair_groups.clone(),
        scatters: [(args.binned_scatter, true), (args.one_pass_scatter, false)]
            .into_iter()
            .filter_map(|(asked, binned)| asked.then_some(binned))
            .collect(),
    };
    let max = args
        .g1
        .iter()
        .chain(&args.g2)
        .chain(&args.sweep_g1)
        .chain(&args.sweep_g2)
        .chain(&args.shifted)
        .chain([
            &args.sparse,
            &args.resident,
            &args.batch,
            &args.streamed,
            &args.chunked,
        ])
        .copied()
        .max()
        .unwrap_or(20);
    // Spare scalars beyond the largest size give every run a fresh window of them.
    let total = (1usize << max) + (1 << 20);
    let t = Instant::now();
    let mut host = random_scalars(total, args.seed + 1);
    let mut pinned = ctx.device.alloc_pinned::<FrRepr>(total)?;
    pinned.as_mut_slice()?.copy_from_slice(&to_reprs(&host));
    eprintln!(
        "==> {total} random scalars in pinned memory in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let mut rows = Vec::new();
    ctx.group::<G1>(&args.g1, &args.sweep_g1, &host, &pinned, &mut rows)?;
    ctx.engine.release_workspaces();
    rows.extend(shifted(&ctx, args, &host, &pinned)?);
    ctx.engine.release_workspaces();
    if args.resident > 0 {
        rows.extend(resident(&ctx, args, &host, &pinned)?);
    }
    if args.chunked > 0 {
        rows.extend(chunked(&ctx, args, &host, &pinned)?);
        ctx.engine.release_workspaces();
    }
    if args.batch > 0 {
        rows.push(batch(&ctx, args, &host, &pinned, &rows)?);
    }
    ctx.engine.release_workspaces();
    if args.streamed > 0 {
        rows.push(streamed(&ctx, args, &host, &pinned, &rows)?);
    }
    ctx.engine.release_workspaces();
    ctx.group::<G2>(&args.g2, &args.sweep_g2, &host, &pinned, &mut rows)?;
    ctx.engine.release_workspaces();
    if args.sparse > 0 {
        host = sparse_scalars(total, 0.495, 0.495, args.seed + 2);
        pinned.as_mut_slice()?.copy_from_slice(&to_reprs(&host));
        rows.extend(sparse(&ctx, args, &host, &pinned, &rows)?);
    }

    println!();
    println!(
        "GPU MSM, {}; bases on the device, scalars streamed from pinned memory unless noted; \
         wall time of the whole call (result on the host), median of {} runs after warm-up",
        ctx.device.info(),
        args.runs
    );
    println!("| measurement | cuzk ms | sppark ms | cuzk / sppark | target ms | floor ms |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        let ours = r.ours.as_secs_f64() * 1e3;
        let opt = |v: Option<f64>| v.map_or("-".into(), |s| format!("{s:.1}"));
        let ratio = r.sppark.map_or("-".into(), |s| format!("{:.2}", ours / s));
        println!(
            "| {} | {ours:.2} | {} | {ratio} | {} | {} |",
            r.what,
            opt(r.sppark),
            opt(r.target),
            opt(r.floor)
        );
    }
    Ok(())
}

/// G1 at `--resident` with the scalars already on the device, against the pinned figure.
fn resident(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
) -> Result<Vec<Row>> {
    let log_n = args.resident;
    let n = 1usize << log_n;
    let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
    let on_device = ctx.stream.upload(&pinned.as_slice()?[..n])?;
    let dense = MsmConfig {
        split: Split::Dense,
        ..MsmConfig::default()
    };
    let t_dev = time(ctx.runs, |_| {
        ctx.engine
            .msm_with(&ctx.stream, &bases, Scalars::Device(&on_device), &dense)?;
        Ok(())
    })?;
    let (got, _) = ctx
        .engine
        .msm_with(&ctx.stream, &bases, Scalars::Device(&on_device), &dense)?;
    ensure!(
        got == generated_msm::<G1>(&host[..n], ctx.seed, GEN_POINTS_PER_THREAD),
        "device-resident MSM disagrees with the check"
    );
    let t_pinned = ctx.measure::<G1>(&bases, pinned, host, n, &dense)?;
    eprintln!(
        "    G1 2^{log_n}: device-resident scalars {:.3} ms, pinned {:.3} ms ({:+.1}%)",
        t_dev.as_secs_f64() * 1e3,
        t_pinned.as_secs_f64() * 1e3,
        (t_pinned.as_secs_f64() / t_dev.as_secs_f64() - 1.0) * 100.0
    );
    Ok(vec![
        Row {
            what: format!("G1 2^{log_n}, scalars device-resident"),
            ours: t_dev,
            sppark: None,
            target: None,
            floor: Some(floor_ms("g1", log_n)),
        },
        Row {
            what: format!("G1 2^{log_n}, pinned again (≤ +10% target)"),
            ours: t_pinned,
            sppark: None,
            target: Some(t_dev.as_secs_f64() * 1.1e3),
            floor: None,
        },
    ])
}

/// G1 at `--chunked` with the scalars on the device (as the prover's H MSM reads them) under
/// each `--chunk-gib` allowance, with the plan's chunks and the phases of a profiled call.
fn chunked(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
) -> Result<Vec<Row>> {
    let log_n = args.chunked;
    let n = 1usize << log_n;
    let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
    let on_device = ctx.stream.upload(&pinned.as_slice()?[..n])?;
    let want = generated_msm::<G1>(&host[..n], ctx.seed, GEN_POINTS_PER_THREAD);
    let mut rows = Vec::new();
    for &gib in &args.chunk_gib {
        let cfg = MsmConfig {
            split: Split::Dense,
            vram_allowance: Some(gib << 30),
            ..MsmConfig::default()
        };
        // Each allowance plans its own buffers: the last one's are released first.
        ctx.engine.release_workspaces();
        ctx.stream.synchronize()?;
        let t = time(ctx.runs, |_| {
            ctx.engine
                .msm_with(&ctx.stream, &bases, Scalars::Device(&on_device), &cfg)?;
            Ok(())
        })?;
        let (got, info) = ctx.engine.msm_with(
            &ctx.stream,
            &bases,
            Scalars::Device(&on_device),
            &MsmConfig {
                profile: true,
                ..cfg
            },
        )?;
        ensure!(
            got == want,
            "G1 MSM of {n} points under {gib} GiB disagrees with the check"
        );
        let chunks = info.plan.chunks(n);
        eprintln!(
            "    G1 2^{log_n}, device scalars, {gib} GiB: {:.3} ms; c = {}, {chunks} chunk(s) of {} × {} pass(es), binned {}",
            t.as_secs_f64() * 1e3,
            info.plan.bits,
            info.plan.chunk,
            info.plan.passes(),
            info.plan.bin_windows > 0
        );
        for (phase, ms) in &info.phases {
            eprintln!("      {phase:<28} {ms:>9.3} ms");
        }
        rows.push(Row {
            what: format!("G1 2^{log_n}, scalars device-resident, ≤ {gib} GiB: {chunks} chunk(s)"),
            ours: t,
            sppark: None,
            target: None,
            floor: Some(floor_ms("g1", log_n)),
        });
    }
    Ok(rows)
}

/// G1 at each `--shifted` size over shifted copies of its bases, one table per `--shift-bits`
/// width with as many copies as fit beside the call (none where not even two do: the row then
/// says so and times the bases alone, as the engine falls back).
fn shifted(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let dense = MsmConfig {
        split: Split::Dense,
        ..MsmConfig::default()
    };
    for &log_n in args.shifted.iter().filter(|&&l| l > 0) {
        let n = 1usize << log_n;
        for &bits in &args.shift_bits {
            let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
            // Memory freed on the stream (the last row's bases and buffers) returns to the
            // driver at a synchronisation; until then it counts as used.
            ctx.stream.synchronize()?;
            let copies = ctx.engine.copies_that_fit::<G1>(&bases, bits, &dense)?;
            let t = Instant::now();
            let bases = ctx
                .engine
                .shift_bases::<G1>(&ctx.stream, bases, bits, copies)?;
            ctx.stream.synchronize()?;
            let made = t.elapsed();
            let gib = bases.device_bytes() as f64 / (1u64 << 30) as f64;
            eprintln!(
                "==> G1 2^{log_n}: {copies} copies for {bits}-bit windows made in {:.2} s, \
                 {gib:.1} GiB with the bases",
                made.as_secs_f64()
            );
            let t = ctx.measure::<G1>(&bases, pinned, host, n, &dense)?;
            let what = if copies > 1 {
                format!(
                    "G1 2^{log_n}, {copies} shifted copies, c = {bits} ({gib:.1} GiB, made in \
                     {:.1} s)",
                    made.as_secs_f64()
                )
            } else {
                format!("G1 2^{log_n}, c = {bits}: no copies fit, bases alone")
            };
            rows.push(Row {
                what,
                ours: t,
                sppark: sppark_ms("g1", log_n),
                target: target_ms("g1", log_n),
                floor: None,
            });
            drop(bases);
            ctx.engine.release_workspaces();
            // Give the copies back to the driver before the next row or group allocates.
            ctx.stream.synchronize()?;
        }
    }
    Ok(rows)
}

/// G1 at `--sparse` with 49.5% zeros, 49.5% ones and 1% random scalars, split and dense.
fn sparse(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
    rows: &[Row],
) -> Result<Vec<Row>> {
    let log_n = args.sparse;
    let n = 1usize << log_n;
    let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
    let split = ctx.measure::<G1>(&bases, pinned, host, n, &MsmConfig::default())?;
    let dense_cfg = MsmConfig {
        split: Split::Dense,
        ..MsmConfig::default()
    };
    let dense = ctx.measure::<G1>(&bases, pinned, host, n, &dense_cfg)?;
    let random_dense = rows
        .iter()
        .find(|r| r.what == format!("G1 2^{log_n}"))
        .map(|r| r.ours.as_secs_f64() * 1e3);
    if let Some(d) = random_dense {
        eprintln!(
            "    sparse 2^{log_n}: split {:.3} ms = {:.1}x faster than dense random scalars",
            split.as_secs_f64() * 1e3,
            d / (split.as_secs_f64() * 1e3)
        );
    }
    Ok(vec![
        Row {
            what: format!("G1 2^{log_n} sparse (99% 0/1), 0/1 split"),
            ours: split,
            sppark: None,
            target: random_dense.map(|d| d / 5.0),
            floor: None,
        },
        Row {
            what: format!("G1 2^{log_n} sparse (99% 0/1), no split"),
            ours: dense,
            sppark: None,
            target: None,
            floor: None,
        },
    ])
}

/// Offset of scalar window `i` of `n` in a pinned array with `spare` scalars beyond `n`: a
/// different window per run and per set.
fn window(i: usize, spare: usize) -> usize {
    if spare == 0 {
        0
    } else {
        i.wrapping_mul(7919 * 64) % spare
    }
}

/// G1 at `--batch`: `--batch-sets` sets of pinned scalars (different windows of the pinned
/// array) in one `msm_batch` call against the same resident bases; the row is the wall time
/// of the call divided by the sets.
fn batch(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
    rows: &[Row],
) -> Result<Row> {
    let log_n = args.batch;
    let n = 1usize << log_n;
    let sets = args.batch_sets.max(1);
    let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
    ctx.stream.synchronize()?;
    let dense = MsmConfig {
        split: Split::Dense,
        ..MsmConfig::default()
    };
    let spare = pinned.len() - n;
    let offsets = |i: usize| -> Vec<usize> {
        (0..sets)
            .map(|s| window(i.wrapping_mul(sets).wrapping_add(s), spare))
            .collect()
    };
    let views = |offs: &[usize]| -> Vec<Scalars<'_>> {
        offs.iter()
            .map(|&o| Scalars::PinnedRange(pinned, o..o + n))
            .collect()
    };
    let t = time(ctx.runs, |i| {
        ctx.engine
            .msm_batch_with::<G1>(&ctx.stream, &bases, &views(&offsets(i)), &dense)?;
        Ok(())
    })?;
    let offs = offsets(0);
    let (got, infos) =
        ctx.engine
            .msm_batch_with::<G1>(&ctx.stream, &bases, &views(&offs), &dense)?;
    for (k, (&o, p)) in offs.iter().zip(&got).enumerate() {
        ensure!(
            *p == generated_msm::<G1>(&host[o..o + n], ctx.seed, GEN_POINTS_PER_THREAD),
            "set {k} of the G1 2^{log_n} batch disagrees with the check"
        );
    }
    let per = t / sets as u32;
    let single = rows
        .iter()
        .find(|r| r.what == format!("G1 2^{log_n}"))
        .map(|r| r.ours.as_secs_f64() * 1e3);
    eprintln!(
        "    G1 2^{log_n} batch of {sets}: {:.3} ms per MSM ({:.3} ms the call), scalars {}; \
         single MSM {}",
        per.as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e3,
        if infos[0].plan.sizes.staging == 0 {
            "copied whole ahead of each set"
        } else {
            "staged in pieces"
        },
        single.map_or("not measured".into(), |s| format!("{s:.3} ms"))
    );
    Ok(Row {
        what: format!("G1 2^{log_n} batch of {sets}, per MSM"),
        ours: per,
        sppark: sppark_ms("g1", log_n),
        target: None,
        floor: Some(floor_ms("g1", log_n)),
    })
}

/// G1 at `--streamed` with the bases in pinned host memory, streamed through the device in
/// chunks under a `--streamed-gib` allowance.
fn streamed(
    ctx: &Ctx,
    args: &Args,
    host: &[cuzk_field::Scalar],
    pinned: &PinnedBuffer<FrRepr>,
    rows: &[Row],
) -> Result<Row> {
    let log_n = args.streamed;
    let n = 1usize << log_n;
    let t0 = Instant::now();
    let host_bases = {
        let bases = ctx.engine.generate_bases::<G1>(&ctx.stream, n, ctx.seed)?;
        let mut points = ctx.device.alloc_pinned(n)?;
        ctx.stream.copy_to_pinned(bases.points(), &mut points)?;
        points.synchronize()?;
        HostBases::<G1>::new(points)
    };
    eprintln!(
        "==> G1 bases 2^{log_n} in pinned host memory in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let cfg = MsmConfig {
        vram_allowance: Some(args.streamed_gib << 30),
        split: Split::Dense,
        ..MsmConfig::default()
    };
    let spare = pinned.len() - n;
    let t = time(ctx.runs, |i| {
        let off = window(i, spare);
        ctx.engine.msm_host_bases_with::<G1>(
            &ctx.stream,
            &host_bases,
            Scalars::PinnedRange(pinned, off..off + n),
            &cfg,
        )?;
        Ok(())
    })?;
    let off = window(0, spare);
    let (got, info) = ctx.engine.msm_host_bases_with::<G1>(
        &ctx.stream,
        &host_bases,
        Scalars::PinnedRange(pinned, off..off + n),
        &MsmConfig {
            profile: true,
            ..cfg
        },
    )?;
    ensure!(
        got == generated_msm::<G1>(&host[off..off + n], ctx.seed, GEN_POINTS_PER_THREAD),
        "G1 2^{log_n} with host-streamed bases disagrees with the check"
    );
    let resident = rows
        .iter()
        .find(|r| r.what == format!("G1 2^{log_n}"))
        .map(|r| r.ours.as_secs_f64() * 1e3);
    eprintln!(
        "    G1 2^{log_n} host-streamed bases, {} GiB: {:.3} ms; {} chunk(s) of {} points, c = {}, \
         {} sort chunk(s) × {} pass(es) each; resident bases {}",
        args.streamed_gib,
        t.as_secs_f64() * 1e3,
        info.cut.chunks,
        info.cut.chunk,
        info.cut.plan.bits,
        info.cut.plan.chunks(info.cut.chunk),
        info.cut.plan.passes(),
        resident.map_or("not measured".into(), |s| format!("{s:.3} ms"))
    );
    for (phase, ms) in &info.call.phases {
        eprintln!("      {phase:<28} {ms:>9.3} ms");
    }
    Ok(Row {
        what: format!(
            "G1 2^{log_n} host-streamed bases, allowance {} GiB",
            args.streamed_gib
        ),
        ours: t,
        sppark: None,
        target: None,
        floor: Some(floor_ms("g1", log_n)),
    })
}
