//! `cuzk-bench ntt`: the GPU NTT engine on device-resident data at 2^20 … 2^27 and the Groth16 H
//! step at 2^27 (device-resident, and with pinned-memory transfers), timed with CUDA events,
//! against sppark's figures on the same H200 (natural order against its natural-order
//! transform, bit-reversed against its bit-reversed one) and the integer multiply-add floor.

use crate::stats::{median, ms};
use anyhow::{ensure, Context, Result};
use cuzk_cuda::{Device, DeviceBuffer, Stream};
use cuzk_field::FrRepr;
use cuzk_ntt::gpu::{ArithCode, ArithOp, NttEngine};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::time::Duration;

/// Options of `cuzk-bench ntt`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Timed runs per measurement (after warm-up); the median is reported. At least 5.
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// Sizes (log2) of the single-transform measurements.
    #[arg(long, value_delimiter = ',', default_value = "20,22,24,26,27")]
    sizes: Vec<u32>,
    /// log2 size of the Groth16 H step measurements (0 skips them).
    #[arg(long, default_value_t = 27)]
    h_size: u32,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Pass factors of order up to 2^this from one table instead of two
    /// (`NttEngine::set_direct_factor_log`; default: the engine's, 20). At 27 the 2^27 top
    /// pass reads a 4 GiB table per direction instead of multiplying two entries.
    #[arg(long)]
    direct_factor_log: Option<u32>,
    /// Elements every pass thread holds, log2: 2 (four a thread, more resident warps) or 3
    /// (eight); default: the engine's choice per pass (`NttEngine::set_elems_log`).
    #[arg(long)]
    elems_log: Option<u32>,
}

/// sppark's NTT on this H200, device-resident data, natural order in and out, medians
/// (sppark v0.1.15, 2026-12-01; the GPU notes).
fn sppark_ms(log_n: u32) -> Option<f64> {
    match log_n {
        20 => Some(0.280),
        22 => Some(1.123),
        24 => Some(4.742),
        26 => Some(23.83),
        27 => Some(44.39),
        _ => None,
    }
}

/// The same, with the output left in bit-reversed order (no bit-reversal pass): the reference
/// for `ntt_to_bit_reversed` and `intt_from_bit_reversed`.
fn sppark_bit_reversed_ms(log_n: u32) -> Option<f64> {
    match log_n {
        20 => Some(0.264),
        22 => Some(1.046),
        24 => Some(4.428),
        26 => Some(20.94),
        27 => Some(42.35),
        _ => None,
    }
}

/// The integer-rate floor: (log_n/2)·n butterflies, each one Fr multiplication of 224 32-bit
/// multiply-adds (this engine's Montgomery product), at 16.7·10^12 multiply-adds per second.
fn floor_ms(log_n: u32) -> f64 {
    let butterflies = log_n as f64 / 2.0 * (1u64 << log_n) as f64;
    butterflies * 224.0 / 16.7e12 * 1e3
}

fn random_reprs(seed: u64, n: usize) -> Vec<FrRepr> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![FrRepr::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 20));
            for x in chunk {
                let mut l: [u64; 4] = rng.gen();
                l[3] &= (1 << 62) - 1; // below 2^254 < r, and never all zero in practice
                x.limbs = l;
            }
        });
    out
}

/// Device time of `work`, median of `runs` after two warm-up runs, by events around each run.
fn time_device(
    device: &Device,
    stream: &Stream,
    runs: usize,
    mut work: impl FnMut(usize) -> Result<()>,
) -> Result<Duration> {
    for i in 0..2 {
        work(i)?;
    }
    let (start, end) = (device.new_event()?, device.new_event()?);
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        stream.record(&start)?;
        work(i)?;
        stream.record(&end)?;
        samples.push(Duration::from_secs_f64(
            start.elapsed_ms(&end)? as f64 / 1e3,
        ));
    }
    Ok(median(&samples))
}

struct Row {
    what: String,
    ours: Duration,
    sppark: Option<f64>,
    floor: Option<f64>,
}

pub fn run(args: &Args) -> Result<()> {
    ensure!(
        args.runs >= 5,
        "--runs must be at least 5 (got {})",
        args.runs
    );
    let device = Device::open(0).context("opening GPU 0")?;
    eprintln!("==> {}", device.info());
    let engine = NttEngine::new(&device)?;
    if let Some(log) = args.direct_factor_log {
        engine.set_direct_factor_log(log)?;
        eprintln!("==> pass factors of order up to 2^{log} from one table");
    }
    if let Some(e) = args.elems_log {
        engine.set_elems_log(Some(e))?;
        eprintln!("==> {} elements a pass thread", 1u32 << e);
    }
    let stream = device.new_stream()?;
    let mut rows = Vec::new();

    arithmetic(&device, &engine, &stream, args)?;

    for &log_n in &args.sizes {
        let n = 1usize << log_n;
        // Rotate among enough vectors that each run starts from data outside the 60 MB L2.
        let copies = (256usize << 20).div_ceil(n * 32).clamp(1, 8);
        let host = random_reprs(args.seed + log_n as u64, n);
        let mut bufs: Vec<DeviceBuffer<FrRepr>> = (0..copies)
            .map(|_| stream.upload(&host))
            .collect::<Result<_, _>>()?;
        engine.prepare(&stream, log_n)?;
        {
            let tag = "";
            let t = time_device(&device, &stream, args.runs, |i| {
                let b = &mut bufs[i % copies];
                Ok(engine.ntt(&stream, &mut [b.as_view_mut()])?)
            })?;
            eprintln!(
                "    ntt 2^{log_n}{tag}: {} ms (median of {})",
                ms(t),
                args.runs
            );
            let t_inv = time_device(&device, &stream, args.runs, |i| {
                let b = &mut bufs[i % copies];
                Ok(engine.intt(&stream, &mut [b.as_view_mut()])?)
            })?;
            eprintln!("    intt 2^{log_n}{tag}: {} ms", ms(t_inv));
            for (label, ms) in engine.profile(&stream, &mut [bufs[0].as_view_mut()])? {
                eprintln!("      {label:<24} {ms:>9.3} ms");
            }
            // The networks alone: evaluations left in (or taken from) bit-reversed order.
            let t_rev = time_device(&device, &stream, args.runs, |i| {
                let b = &mut bufs[i % copies];
                Ok(engine.ntt_to_bit_reversed(&stream, &mut [b.as_view_mut()])?)
            })?;
            let t_inv_rev = time_device(&device, &stream, args.runs, |i| {
                let b = &mut bufs[i % copies];
                Ok(engine.intt_from_bit_reversed(&stream, &mut [b.as_view_mut()])?)
            })?;
            eprintln!(
                "    ntt to bit-reversed 2^{log_n}: {} ms, intt from bit-reversed: {} ms",
                ms(t_rev),
                ms(t_inv_rev)
            );
            let (sppark, floor) = (sppark_ms(log_n), Some(floor_ms(log_n)));
            let sppark_rev = sppark_bit_reversed_ms(log_n);
            for (what, ours, sppark) in [
                (format!("NTT 2^{log_n}{tag}"), t, sppark),
                (format!("iNTT 2^{log_n}{tag}"), t_inv, sppark),
                (
                    format!("NTT 2^{log_n}, bit-reversed out"),
                    t_rev,
                    sppark_rev,
                ),
                (
                    format!("iNTT 2^{log_n}, bit-reversed in"),
                    t_inv_rev,
                    sppark_rev,
                ),
            ] {
                rows.push(Row {
                    what,
                    ours,
                    sppark,
                    floor,
                });
            }
        }
        drop(bufs);
    }

    if args.h_size > 0 {
        rows.extend(h_step(&device, &engine, &stream, args)?);
    }

    println!();
    println!(
        "GPU NTT over Fr, {}; medians of {} runs after warm-up, CUDA events",
        device.info(),
        args.runs
    );
    println!("| measurement | cuzk ms | sppark ms | cuzk / sppark | int floor ms |");
    println!("|---|---:|---:|---:|---:|");
    for r in &rows {
        let ours = r.ours.as_secs_f64() * 1e3;
        let sp = r.sppark.map_or("-".into(), |s| format!("{s:.2}"));
        let ratio = r.sppark.map_or("-".into(), |s| format!("{:.2}", ours / s));
        let floor = r.floor.map_or("-".into(), |f| format!("{f:.2}"));
        println!("| {} | {:.3} | {sp} | {ratio} | {floor} |", r.what, ours);
    }
    Ok(())
}

/// Multiplication throughput of the NTT's arithmetic and of the generic field code.
fn arithmetic(device: &Device, engine: &NttEngine, stream: &Stream, args: &Args) -> Result<()> {
    let n = 1usize << 22;
    let iters = 64u32;
    let a = stream.upload(&random_reprs(args.seed + 100, n))?;
    let b = stream.upload(&random_reprs(args.seed + 101, n))?;
    let mut out = stream.alloc::<FrRepr>(n)?;
    for (op, label) in [
        (ArithOp::Mul, "mul"),
        (ArithOp::Add, "add"),
        (ArithOp::Sub, "sub"),
    ] {
        // Lazy: the passes' form, values below 2r between operations (these inputs are below r).
        // Fp64: the lazily reduced product on the FP64 pipe (kernels/field/fr_f64.cuh); the
        // `Twice` codes and LazyAndFp64 run two independent chains a thread.
        for code in ArithCode::ALL {
            let product_only =
                !matches!(code, ArithCode::Ntt | ArithCode::Lazy | ArithCode::Generic);
            if product_only && op != ArithOp::Mul {
                continue; // Lazy's sums and differences
            }
            let t = time_device(device, stream, 5, |_| {
                Ok(engine.arith(stream, (op, code), &a, &b, &mut out, iters)?)
            })?;
            let products = n as f64 * iters as f64 * code.products_per_iter() as f64;
            let per_s = products / t.as_secs_f64();
            eprintln!(
                "    Fr {label} ({code:?}): {:.1} G/s ({} ms for {n} x {iters})",
                per_s / 1e9,
                ms(t)
            );
            if op == ArithOp::Mul && !product_only {
                // 224 multiply-adds per product: the share of the 16.7·10^12/s integer rate.
                eprintln!(
                    "      = {:.0}% of the multiply-add rate at 224 per product",
                    per_s * 224.0 / 16.7e12 * 100.0
                );
            }
        }
    }
    Ok(())
}

/// The H step at `h_size`: device-resident, then including the uploads of a, b, c from pinned
/// memory and the download of h into pinned memory.
fn h_step(device: &Device, engine: &NttEngine, stream: &Stream, args: &Args) -> Result<Vec<Row>> {
    let log_n = args.h_size;
    let n = 1usize << log_n;
    let mut pinned_in = device.alloc_pinned::<FrRepr>(n)?;
    let mut pinned_out = device.alloc_pinned::<FrRepr>(n)?;
    let host = random_reprs(args.seed + 200, n);
    pinned_in.as_mut_slice()?.copy_from_slice(&host);
    drop(host);
    let (mut a, mut b, mut c) = (
        stream.alloc::<FrRepr>(n)?,
        stream.alloc::<FrRepr>(n)?,
        stream.alloc::<FrRepr>(n)?,
    );
    for v in [&mut a, &mut b, &mut c] {
        stream.copy_pinned_to_device(&pinned_in, v)?;
    }
    engine.prepare(stream, log_n)?;

    let resident = time_device(device, stream, args.runs, |_| {
        Ok(engine.groth16_h(
            stream,
            &mut [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()],
        )?)
    })?;
    eprintln!(
        "    groth16_h 2^{log_n} device-resident: {} ms",
        ms(resident)
    );
    let with_copies = time_device(device, stream, args.runs, |_| {
        for v in [&mut a, &mut b, &mut c] {
            stream.copy_pinned_to_device(&pinned_in, v)?;
        }
        engine.groth16_h(
            stream,
            &mut [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()],
        )?;
        Ok(stream.copy_to_pinned(&a, &mut pinned_out)?)
    })?;
    eprintln!(
        "    groth16_h 2^{log_n} with pinned uploads and download: {} ms",
        ms(with_copies)
    );
    for (label, ms) in engine.profile(
        stream,
        &mut [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()],
    )? {
        eprintln!("      {label:<24} {ms:>9.3} ms");
    }
    ensure!(
        pinned_out
            .as_slice()?
            .iter()
            .any(|x| *x != FrRepr::default()),
        "h came back all zero"
    );
    Ok(vec![
        Row {
            what: format!("H step 2^{log_n} (device-resident)"),
            ours: resident,
            sppark: None,
            // Six transforms: A and B there and back, C back, A·B back.
            floor: Some(6.0 * floor_ms(log_n)),
        },
        Row {
            what: format!("H step 2^{log_n} (+ pinned up/download)"),
            ours: with_copies,
            sppark: None,
            floor: None,
        },
    ])
}
