//! The host side of a GPU proof alone: witness synthesis and the checked evaluation of a, b, c
//! (what a synthesis worker does before a lane proves), for PoRep-shaped partitions, with
//! several workers at once on the shared thread pool as the daemon runs them. Says how many
//! partitions per second the host can feed the GPUs with, without a GPU.

use crate::stats::median;
use anyhow::{ensure, Result};
use clap::Parser;
use cuzk_circuits::SyntheticPoRep;
use cuzk_field::FrRepr;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
pub struct Args {
    /// log2 of the domain: partitions of 2^log − 2 constraints.
    #[arg(long, default_value_t = 24)]
    log: u32,
    /// Concurrent workers, comma-separated: each synthesizes and evaluates partitions in turn.
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',')]
    workers: Vec<usize>,
    /// Partitions each worker makes per level (after one untimed partition per worker).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Give each witness's memory back and map fresh memory for the next, instead of writing
    /// the next witness into it as the daemon's synthesis workers do.
    #[arg(long)]
    fresh: bool,
}

struct Sample {
    synth: Duration,
    eval: Duration,
    drop: Duration,
}

/// One worker: `rounds + 1` partitions (the first untimed), evaluated into buffers it keeps,
/// as a lane's pinned buffers are kept; each witness is written into the previous one's memory
/// unless `fresh`.
fn worker(
    pce: &cuzk_synth::Pce,
    n: usize,
    first_seed: u64,
    rounds: usize,
    fresh: bool,
) -> Result<Vec<Sample>> {
    let size = 1usize << n.next_power_of_two().trailing_zeros();
    let mut abc = [(); 3].map(|_| vec![FrRepr::default(); size]);
    let mut samples = Vec::with_capacity(rounds);
    let mut spare = cuzk_synth::Witness::default();
    for round in 0..=rounds {
        let start = Instant::now();
        let circuit = SyntheticPoRep::new(n, first_seed + round as u64);
        let w = pce.synthesize_witness_reusing(circuit, std::mem::take(&mut spare))?;
        let synth = start.elapsed();
        let start = Instant::now();
        let [a, b, c] = &mut abc;
        pce.evaluate_checked_into(&w, a, b, c)?;
        let eval = start.elapsed();
        let start = Instant::now();
        if fresh {
            drop(w);
        } else {
            spare = w;
        }
        let drop = start.elapsed();
        if round > 0 {
            samples.push(Sample { synth, eval, drop });
        }
    }
    Ok(samples)
}

pub fn run(args: &Args) -> Result<()> {
    ensure!((2..=28).contains(&args.log), "--log must be in 2..=28");
    ensure!(args.rounds >= 1, "--rounds must be at least 1");
    let n = (1usize << args.log) - 2;
    let start = Instant::now();
    let pce = Arc::new(SyntheticPoRep::new(n, 0).pce());
    eprintln!(
        "host: PCE of {n} constraints in {:.2} s; {} threads in the pool",
        start.elapsed().as_secs_f64(),
        rayon::current_num_threads()
    );
    let mut rows = Vec::new();
    for &workers in &args.workers {
        ensure!(workers >= 1, "--workers must be at least 1");
        let start = Instant::now();
        let results: Vec<Result<Vec<Sample>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|k| {
                    let pce = Arc::clone(&pce);
                    let seed = 1000 * k as u64;
                    s.spawn(move || worker(&pce, n, seed, args.rounds, args.fresh))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("worker panicked"))
                .collect()
        });
        let wall = start.elapsed();
        let samples: Vec<Sample> = results
            .into_iter()
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let timed = samples.len();
        let pick = |f: fn(&Sample) -> Duration| median(&samples.iter().map(f).collect::<Vec<_>>());
        // The untimed first partition of each worker runs inside `wall` too.
        let per = wall.as_secs_f64() / (timed + workers) as f64;
        rows.push((
            workers,
            timed + workers,
            wall,
            per,
            pick(|s| s.synth),
            pick(|s| s.eval),
            pick(|s| s.drop),
        ));
        eprintln!("host: {workers} worker(s): {per:.3} s per partition");
    }
    println!(
        "| workers | partitions | wall s | s/partition | synthesis ms p50 | evaluation ms p50 | witness drop ms p50 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (w, p, wall, per, s, e, d) in rows {
        println!(
            "| {w} | {p} | {:.2} | {per:.3} | {:.1} | {:.1} | {:.1} |",
            wall.as_secs_f64(),
            s.as_secs_f64() * 1e3,
            e.as_secs_f64() * 1e3,
            d.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
