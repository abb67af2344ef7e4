//! `cuzk bench`: a load generator. Sends `jobs` requests with at most `c` in flight, for
//! each `c` of a sweep, and reports per-phase times, s/proof and latency percentiles, and
//! from the daemon's metrics the GPU busy share per device, per-phase GPU times and the
//! daemon's peak resident memory.

use crate::client::{Client, Target};
use crate::report::{sweep_table, Run, Sample};
use crate::request::RequestSpec;
use crate::scrape::{GpuUse, Scrape};
use anyhow::{ensure, Result};
use clap::Args;
use cuzk_proto::{await_proof_response, GetMetricsRequest, ProveRequest, SubmitProofRequest};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// `cuzk bench` options.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Requests in flight at once; several values (`-c 1,2,4`) sweep them.
    #[arg(
        short = 'c',
        long = "concurrency",
        value_delimiter = ',',
        default_value = "1"
    )]
    pub concurrency: Vec<usize>,
    /// Requests per concurrency level.
    #[arg(short = 'j', long = "jobs", default_value_t = 8)]
    pub jobs: usize,
    /// At least this many requests per request slot at each level (`-j` is raised to
    /// rounds × c), so that high concurrency levels reach a steady state; 0: `-j` alone.
    #[arg(long, default_value_t = 0)]
    pub rounds: usize,
    /// Skip the first, unmeasured request (which pays the circuit's setup).
    #[arg(long)]
    pub no_warmup: bool,
    /// What to prove (default: synthetic-porep with log2_constraints=14).
    #[command(flatten)]
    pub request: RequestSpec,
}

/// Runs the benchmark and prints its tables.
pub async fn run(target: &Target, args: &BenchArgs) -> Result<()> {
    ensure!(args.jobs > 0, "-j must be at least 1");
    ensure!(
        args.concurrency.iter().all(|&c| c > 0),
        "-c values must be at least 1"
    );
    let mut spec = args.request.resolve()?;
    if spec.is_empty() {
        spec.circuit = Some("synthetic-porep".into());
        spec.fields.insert("log2_constraints".into(), 14);
    }
    let base = spec.to_submit()?;
    let client = target.client().await?;
    eprintln!("bench: {} against {}", spec.label(), target.uri);
    if !args.no_warmup {
        eprintln!("warm-up request (not measured)…");
        let warm = one(client.clone(), request(&base, u64::MAX)).await;
        ensure!(warm.0.ok, "the warm-up request failed: {}", warm.1);
    }
    let mut runs = Vec::new();
    let mut seed = 0;
    for &c in &args.concurrency {
        let jobs = args.jobs.max(args.rounds.saturating_mul(c));
        let run = level(&client, &base, c, jobs, &mut seed).await;
        crate::emit(&format!(
            "\n{} (c={c})\n\n{}\n{}{}\n",
            spec.label(),
            run.phase_table(),
            run.gpu_tables(),
            run.summary()
        ));
        runs.push(run);
    }
    if runs.len() > 1 {
        crate::emit(&format!(
            "\nsweep: {}\n\n{}",
            spec.label(),
            sweep_table(&runs)
        ));
    }
    let failed: usize = runs.iter().map(Run::failed).sum();
    ensure!(failed == 0, "{failed} request(s) failed");
    Ok(())
}

/// Request `i`: the base with a distinct seed where the circuit takes one, so that every
/// proof is of new inputs, not a repeat.
fn request(base: &SubmitProofRequest, i: u64) -> SubmitProofRequest {
    let mut r = base.clone();
    if r.circuit == "synthetic-porep" {
        let seed = r.circuit_fields.get("seed").copied().unwrap_or(0);
        r.circuit_fields
            .insert("seed".into(), seed.wrapping_add(i.wrapping_mul(1 << 20)));
    }
    r
}

async fn level(
    client: &Client,
    base: &SubmitProofRequest,
    concurrency: usize,
    jobs: usize,
    seed: &mut u64,
) -> Run {
    let gate = Arc::new(Semaphore::new(concurrency));
    let before = metrics(client).await;
    let proved_before = before.as_ref().map_or(0.0, partitions_proved);
    let progress = Arc::new(Progress::new(concurrency, jobs));
    let started = Instant::now();
    // The daemon's resident memory, sampled through the level, and its partitions in the
    // progress line (a large proof takes minutes before its job completes).
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let sampler = tokio::spawn({
        let (client, progress) = (client.clone(), Arc::clone(&progress));
        async move {
            let mut peak: Option<f64> = None;
            loop {
                if let Some(m) = metrics(&client).await {
                    if let Some(rss) = m.value("cuzk_process_resident_memory_bytes", &[]) {
                        peak = Some(peak.map_or(rss, |p: f64| p.max(rss)));
                    }
                    progress.partitions(Partitions::of(&m, proved_before), started.elapsed());
                }
                tokio::select! {
                    _ = stopped.changed() => return peak,
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                }
            }
        }
    });
    let mut set = JoinSet::new();
    for _ in 0..jobs {
        let (client, r, gate) = (client.clone(), request(base, *seed), Arc::clone(&gate));
        *seed += 1;
        set.spawn(async move {
            // At most `concurrency` requests are in flight; the rest wait here.
            let _permit = gate.acquire_owned().await.expect("never closed");
            one(client, r).await
        });
    }
    let mut samples = Vec::new();
    let mut first_error = None;
    while let Some(done) = set.join_next().await {
        if let Ok((sample, error)) = done {
            if !sample.ok && first_error.is_none() {
                first_error = Some(error);
            }
            samples.push(sample);
        }
        progress.show(
            samples.len(),
            samples.iter().filter(|s| !s.ok).count(),
            started.elapsed(),
        );
    }
    let wall = started.elapsed();
    // The sampler stops before the progress line ends, so that it draws nothing after it.
    let _ = stop.send(true);
    let rss_peak = sampler.await.ok().flatten();
    progress.finish();
    let after = metrics(client).await;
    if let Some(e) = first_error {
        eprintln!("first failure: {e}");
    }
    let gpu = match (before, after) {
        (Some(before), Some(after)) => {
            let mut u = GpuUse::between(&before, &after, wall.as_secs_f64());
            u.rss_peak = rss_peak;
            Some(u)
        }
        _ => None,
    };
    Run {
        concurrency,
        samples,
        wall,
        gpu,
    }
}

/// The daemon's metrics now, if it answers GetMetrics.
async fn metrics(client: &Client) -> Option<Scrape> {
    let reply = client
        .clone()
        .get_metrics(GetMetricsRequest {})
        .await
        .ok()?;
    Some(Scrape::parse(&reply.into_inner().prometheus_text))
}

/// Sends one request with Prove; the error text is empty on success.
async fn one(mut client: Client, submit: SubmitProofRequest) -> (Sample, String) {
    let t = Instant::now();
    let reply = client
        .prove(ProveRequest {
            submit: Some(submit),
        })
        .await;
    let latency = t.elapsed();
    match reply.map(|r| r.into_inner().result.unwrap_or_default()) {
        Ok(r) if r.status() == await_proof_response::Status::Completed => (
            Sample {
                ok: true,
                proofs: r.partitions.max(1),
                latency,
                phases: [
                    r.queue_wait_ms,
                    r.srs_load_ms,
                    r.synthesis_ms,
                    r.gpu_compute_ms,
                    r.verify_ms,
                    r.total_ms,
                ],
            },
            String::new(),
        ),
        Ok(r) => (
            Sample {
                latency,
                ..Sample::default()
            },
            format!("job {} {:?}: {}", r.job_id, r.status(), r.error_message),
        ),
        Err(status) => (
            Sample {
                latency,
                ..Sample::default()
            },
            format!("{:?}: {}", status.code(), status.message()),
        ),
    }
}

/// Partitions the daemon proved since the level began, and those in flight by stage.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Partitions {
    proved: u64,
    synthesizing: u64,
    ready: u64,
    proving: u64,
}

impl Partitions {
    fn of(m: &Scrape, proved_before: f64) -> Partitions {
        let stage = |s: &str| m.value("cuzk_partitions", &[("stage", s)]).unwrap_or(0.0) as u64;
        Partitions {
            proved: (partitions_proved(m) - proved_before).max(0.0) as u64,
            synthesizing: stage("synthesizing"),
            ready: stage("ready"),
            proving: stage("proving"),
        }
    }
}

/// Partitions every lane has proved since the daemon started.
fn partitions_proved(m: &Scrape) -> f64 {
    m.series("cuzk_lane_proofs_total").map(|(_, v)| v).sum()
}

/// A one-line progress bar on stderr (redrawn in place on a terminal; otherwise one line
/// when a request ends and one every [`Progress::QUIET`] while partitions move, so logs stay
/// readable): requests done, and the daemon's partitions proved and in flight.
struct Progress {
    concurrency: usize,
    jobs: usize,
    terminal: bool,
    state: std::sync::Mutex<ProgressState>,
}

#[derive(Default)]
struct ProgressState {
    done: usize,
    failed: usize,
    partitions: Partitions,
    /// When a line was last written off a terminal.
    last_line: Option<Duration>,
}

impl Progress {
    /// Off a terminal, partition updates alone print at most this often.
    const QUIET: Duration = Duration::from_secs(10);

    fn new(concurrency: usize, jobs: usize) -> Progress {
        Progress {
            concurrency,
            jobs,
            terminal: std::io::stderr().is_terminal(),
            state: Default::default(),
        }
    }

    /// A request ended.
    fn show(&self, done: usize, failed: usize, elapsed: Duration) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.done = done;
        st.failed = failed;
        self.draw(&mut st, elapsed, true);
    }

    /// The daemon's partitions, sampled.
    fn partitions(&self, p: Partitions, elapsed: Duration) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.partitions == p {
            return;
        }
        st.partitions = p;
        self.draw(&mut st, elapsed, false);
    }

    fn draw(&self, st: &mut ProgressState, elapsed: Duration, request_ended: bool) {
        if !self.terminal
            && !request_ended
            && st.last_line.is_some_and(|t| elapsed < t + Self::QUIET)
        {
            return;
        }
        const WIDTH: usize = 30;
        let filled = WIDTH * st.done / self.jobs.max(1);
        let p = st.partitions;
        let line = format!(
            "c={} [{}{}] {}/{} done, {} failed; partitions: {} proved, {} synthesizing, {} ready, {} proving; {:.1} s",
            self.concurrency,
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            st.done,
            self.jobs,
            st.failed,
            p.proved,
            p.synthesizing,
            p.ready,
            p.proving,
            elapsed.as_secs_f64()
        );
        let mut err = std::io::stderr();
        let _ = if self.terminal {
            write!(err, "\r{line}\x1b[K")
        } else {
            st.last_line = Some(elapsed);
            writeln!(err, "{line}")
        };
    }

    fn finish(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}
