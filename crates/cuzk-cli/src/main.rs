//! `cuzk`: the command line of the cuzk proving daemon. It talks to a daemon over gRPC
//! only: `status`, `wait-ready`, `preload`, `evict`, `prove`, `bench`, `soak`.
#![forbid(unsafe_code)]

mod bench;
mod client;
mod report;
mod request;
mod scrape;
mod soak;
mod srs;
mod verify;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use client::{parse_duration, Target};
use cuzk_proto::{await_proof_response, GetStatusRequest, ProveRequest};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `writeln!` into a String, which cannot fail.
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        use std::fmt::Write as _;
        let _ = writeln!($out, $($arg)*);
    }};
}

#[derive(Parser, Debug)]
#[command(name = "cuzk", version, about = "Talk to a cuzk proving daemon")]
struct Cli {
    /// The daemon's gRPC address (host:port or http://host:port).
    #[arg(
        long,
        global = true,
        env = "CUZK_ADDR",
        default_value = "127.0.0.1:9820"
    )]
    addr: String,
    /// Bearer token, for a daemon configured with one.
    #[arg(long, global = true, env = "CUZK_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Backend, lanes, memory, queues, loaded parameters and totals.
    Status,
    /// Waits until the daemon's health service reports SERVING; exits non-zero at the
    /// timeout.
    WaitReady {
        /// How long to wait: 30, 30s, 500ms, 2m.
        #[arg(long, default_value = "60s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Sets a circuit up and places its parameters on every GPU, pinned, ahead of its first
    /// job: a Filecoin id (porep-32g, snap-, wpost-, winning- with 2k, 8m, 512m, 32g, 64g),
    /// a [[preload]] circuit key, or a key already set up.
    Preload {
        /// The circuit id.
        id: String,
    },
    /// Frees a circuit's parameters on every GPU and its host setup.
    Evict {
        /// The circuit id, as for preload.
        id: String,
    },
    /// Proves one request and writes the proof.
    Prove {
        /// Where to write the proof bytes (192 per partition); without it, hex on stdout.
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Where to write the verifying key (bellperson's encoding).
        #[arg(long)]
        vk_out: Option<PathBuf>,
        /// Also verify the proofs here, against the returned verifying key and public inputs
        /// computed from the request (built-in circuits); fails if any does not verify.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        request: request::RequestSpec,
    },
    /// Load generator: per-phase times, s/proof, p50/p95 latency, over one or more
    /// concurrency levels.
    Bench(bench::BenchArgs),
    /// A long mixed run (proofs, cancellations, refusals) that fails when a job is lost, a
    /// proof does not verify, or the daemon's memory grows after warm-up.
    Soak(soak::SoakArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let target = Target::new(&cli.addr, cli.token.clone());
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(async {
        match &cli.cmd {
            Cmd::Status => status(&target).await,
            Cmd::WaitReady { timeout } => wait_ready(&target, *timeout).await,
            Cmd::Preload { id } => srs::preload(&target, id).await,
            Cmd::Evict { id } => srs::evict(&target, id).await,
            Cmd::Prove {
                out,
                vk_out,
                verify,
                request,
            } => prove(&target, request, out.as_ref(), vk_out.as_ref(), *verify).await,
            Cmd::Bench(args) => bench::run(&target, args).await,
            Cmd::Soak(args) => soak::run(&target, args).await,
        }
    })
}

async fn status(target: &Target) -> Result<()> {
    let s = target
        .client()
        .await?
        .get_status(GetStatusRequest {})
        .await
        .context("GetStatus")?
        .into_inner();
    let mut out = String::new();
    outln!(out, "daemon        {} (version {})", target.uri, s.version);
    outln!(out, "backend       {} ({} lane(s))", s.backend, s.lanes);
    outln!(out, "uptime        {} s", s.uptime_seconds);
    outln!(
        out,
        "memory        {} reserved of {} (high water {})",
        mib(s.pinned_memory_bytes),
        mib(s.pinned_memory_limit_bytes),
        mib(s.memory_high_water_bytes)
    );
    outln!(out, "in flight     {} partition(s)", s.partitions_in_flight);
    outln!(
        out,
        "proofs        {} completed, {} failed",
        s.total_proofs_completed,
        s.total_proofs_failed
    );
    outln!(out, "circuits      {}", s.circuits.join(", "));
    let loaded: Vec<&str> = s.loaded_srs.iter().map(|l| l.circuit_id.as_str()).collect();
    outln!(
        out,
        "parameters    {}",
        if loaded.is_empty() {
            "none loaded".into()
        } else {
            loaded.join(", ")
        }
    );
    for q in &s.queues {
        outln!(
            out,
            "queue         {}: {} pending, {} in progress",
            q.proof_kind,
            q.pending,
            q.in_progress
        );
    }
    for g in &s.gpus {
        outln!(
            out,
            "gpu {}         {} ({} free of {})",
            g.ordinal,
            g.name,
            mib(g.vram_free_bytes),
            mib(g.vram_total_bytes)
        );
    }
    emit(&out);
    Ok(())
}

/// Writes command output to stdout; a closed pipe (`cuzk status | head`) ends quietly.
pub fn emit(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

async fn wait_ready(target: &Target, timeout: Duration) -> Result<()> {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let last = match target.channel(left.max(Duration::from_millis(100))).await {
            Ok(channel) => {
                let check = HealthClient::new(channel)
                    .check(HealthCheckRequest {
                        service: cuzk_proto::SERVICE_NAME.into(),
                    })
                    .await;
                match check {
                    Ok(r) if r.get_ref().status() == ServingStatus::Serving => {
                        emit(&format!(
                            "ready: {} serves {}\n",
                            target.uri,
                            cuzk_proto::SERVICE_NAME
                        ));
                        return Ok(());
                    }
                    Ok(r) => format!("health reports {:?}", r.get_ref().status()),
                    Err(e) => format!("health check failed: {}", e.message()),
                }
            }
            Err(e) => format!("{e:#}"),
        };
        if Instant::now() >= deadline {
            bail!("{} not ready after {timeout:?}: {last}", target.uri);
        }
        tokio::time::sleep(Duration::from_millis(200).min(left)).await;
    }
}

async fn prove(
    target: &Target,
    spec: &request::RequestSpec,
    out: Option<&PathBuf>,
    vk_out: Option<&PathBuf>,
    verify: bool,
) -> Result<()> {
    let spec = spec.resolve()?;
    if spec.is_empty() {
        bail!("say what to prove: --circuit (with --field/--input-hex/--input-file), --proof-kind, or --request FILE");
    }
    let submit = spec.to_submit()?;
    let t = Instant::now();
    let r = target
        .client()
        .await?
        .prove(ProveRequest {
            submit: Some(submit.clone()),
        })
        .await
        .context("Prove")?
        .into_inner()
        .result
        .context("the daemon answered without a result")?;
    if r.status() != await_proof_response::Status::Completed {
        bail!(
            "job {} ended {:?}: {}",
            r.job_id,
            r.status(),
            r.error_message
        );
    }
    let checked = if verify {
        let n = verify::check(&submit, &r)?;
        format!(", {n} verified here")
    } else {
        String::new()
    };
    match out {
        Some(path) => {
            std::fs::write(path, &r.proof).with_context(|| format!("writing {}", path.display()))?
        }
        None => {
            let hex: String = r.proof.iter().map(|b| format!("{b:02x}")).collect();
            emit(&format!("{hex}\n"));
        }
    }
    if let Some(path) = vk_out {
        std::fs::write(path, &r.verifying_key)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "job {}: {} proof(s) of {}{}{} in {} ms (queue {} ms, setup {} ms, synthesis {} ms, prepare {} ms, prove {} ms, verify {} ms; device {:?}; client {} ms)",
        r.job_id,
        r.partitions,
        r.circuit_key,
        if r.verified { ", verified" } else { "" },
        checked,
        r.total_ms,
        r.queue_wait_ms,
        r.srs_load_ms,
        r.synthesis_ms,
        r.prepare_ms,
        r.gpu_compute_ms,
        r.verify_ms,
        r.devices,
        t.elapsed().as_millis()
    );
    Ok(())
}
