//! `cargo xtask e2e`: starts cuzk-daemon on free loopback ports with its embedded
//! configuration, waits until it serves, submits a mix of sample circuits at once over
//! gRPC, verifies every proof independently (cuzk's verifier and bellperson's, against
//! public inputs computed here), prints a timing table, and checks that SIGTERM ends the
//! daemon cleanly with its port released.

use anyhow::{bail, ensure, Context, Result};
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_field::Scalar;
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use cuzk_proto::proving_engine_client::ProvingEngineClient;
use cuzk_proto::{
    await_proof_response, AwaitProofRequest, AwaitProofResponse, ProveRequest, SubmitProofRequest,
};
use cuzk_tests::daemon::{connect, wait_serving, READY_TIMEOUT};
use serde::Deserialize;
use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// The request mix compiled into the binary; `--config <file>` replaces it.
const DEFAULT_CONFIG: &str = include_str!("../e2e.toml");

/// How long the daemon may take to exit after SIGTERM.
const EXIT_TIMEOUT: Duration = Duration::from_secs(60);

/// Largest message either side sends; proofs are small, but say so explicitly.
const MAX_MESSAGE: usize = 128 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    job: Vec<JobSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct JobSpec {
    circuit: String,
    preimage_bytes: Option<usize>,
    log_constraints: Option<u32>,
    #[serde(default = "one")]
    partitions: usize,
    #[serde(default = "one")]
    requests: usize,
    #[serde(default)]
    seed: u64,
}

fn one() -> usize {
    1
}

/// One request to send, and what its proofs must verify against.
#[derive(Debug, Clone)]
struct Planned {
    name: String,
    submit: SubmitProofRequest,
    /// Per partition, computed here, not taken from the daemon.
    public_inputs: Vec<Vec<Scalar>>,
    /// Sent with Prove (one call) rather than SubmitProof + AwaitProof.
    via_prove: bool,
}

/// One request's outcome.
#[derive(Debug)]
struct Row {
    name: String,
    via: &'static str,
    response: AwaitProofResponse,
    latency: Duration,
    verify: Duration,
}

fn main() -> Result<()> {
    let (config_path, daemon_path) = parse_args()?;
    let text = match &config_path {
        None => DEFAULT_CONFIG.to_string(),
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading e2e config {}", path.display()))?,
    };
    let config: Config = toml::from_str(&text).context("parsing the e2e config")?;
    let planned = plan(&config)?;
    ensure!(!planned.is_empty(), "the e2e config lists no request");

    let workdir = tempfile::tempdir().context("creating a work directory")?;
    let mut daemon = Daemon::start(&daemon_path, workdir.path())?;
    let outcome = drive(&mut daemon, &planned);
    if outcome.is_err() {
        daemon.print_log_tail();
    }
    outcome
}

fn parse_args() -> Result<(Option<PathBuf>, PathBuf)> {
    let mut config = None;
    let mut daemon = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--config" => config = Some(PathBuf::from(value)),
            "--daemon" => daemon = Some(PathBuf::from(value)),
            _ => bail!("usage: cuzk-e2e [--config <file.toml>] [--daemon <cuzk-daemon>]"),
        }
    }
    let daemon = match daemon {
        Some(path) => path,
        // Built side by side in the same target directory by `cargo xtask e2e`.
        None => std::env::current_exe()?
            .parent()
            .context("the executable has no directory")?
            .join("cuzk-daemon"),
    };
    ensure!(
        daemon.is_file(),
        "no daemon binary at {} (build it with `cargo build -p cuzk-daemon`, or pass --daemon)",
        daemon.display()
    );
    Ok((config, daemon))
}

fn plan(config: &Config) -> Result<Vec<Planned>> {
    let mut planned = Vec::new();
    for job in &config.job {
        for i in 0..job.requests {
            let seed = job.seed.wrapping_add(i as u64);
            let mut submit = SubmitProofRequest {
                circuit: job.circuit.clone(),
                ..SubmitProofRequest::default()
            };
            let (name, public_inputs) = match job.circuit.as_str() {
                "sha256" => {
                    let len = job
                        .preimage_bytes
                        .context("a sha256 job needs preimage_bytes")?;
                    ensure!(job.partitions == 1, "sha256 has one partition");
                    let preimage: Vec<u8> = (0..len).map(|b| (b as u64 ^ seed) as u8).collect();
                    let inputs = Sha256Preimage::new(preimage.clone()).public_inputs();
                    submit.circuit_inputs = preimage;
                    (format!("sha256 {len} B"), vec![inputs])
                }
                "synthetic-porep" => {
                    let log = job
                        .log_constraints
                        .context("a synthetic-porep job needs log_constraints")?;
                    submit.circuit_fields = [
                        ("log2_constraints".to_string(), u64::from(log)),
                        ("seed".to_string(), seed),
                        ("partitions".to_string(), job.partitions as u64),
                    ]
                    .into();
                    // Partition p of a request with seed s is the circuit with seed s + p.
                    let inputs = (0..job.partitions)
                        .map(|p| SyntheticPoRep::new(1 << log, seed + p as u64).public_inputs())
                        .collect();
                    (
                        format!("synthetic-porep 2^{log} ×{}", job.partitions),
                        inputs,
                    )
                }
                other => bail!(
                    "unknown circuit {other:?} in the e2e config (known: sha256, synthetic-porep)"
                ),
            };
            let via_prove = planned.len() % 2 == 1;
            planned.push(Planned {
                name,
                submit,
                public_inputs,
                via_prove,
            });
        }
    }
    Ok(planned)
}

fn drive(daemon: &mut Daemon, planned: &[Planned]) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let started = Instant::now();
    let rows = runtime.block_on(async {
        wait_serving(daemon.addr).await?;
        let client = ProvingEngineClient::new(connect(daemon.addr).await?)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        eprintln!("==> submitting {} requests at once", planned.len());
        let tasks: Vec<_> = planned
            .iter()
            .cloned()
            .map(|p| tokio::spawn(request(client.clone(), p)))
            .collect();
        let mut rows = Vec::new();
        for (task, p) in tasks.into_iter().zip(planned) {
            let (response, latency) = task.await??;
            let verify = check(p, &response).with_context(|| p.name.clone())?;
            eprintln!("    {}: job {} verified", p.name, response.job_id);
            rows.push(Row {
                name: p.name.clone(),
                via: if p.via_prove { "Prove" } else { "Submit+Await" },
                response,
                latency,
                verify,
            });
        }
        anyhow::Ok(rows)
    })?;
    let wall = started.elapsed();
    print_table(&rows, wall);

    let metrics = http_get(daemon.metrics, "/metrics")?;
    let line = format!("cuzk_jobs_total{{outcome=\"succeeded\"}} {}", rows.len());
    ensure!(
        metrics.lines().any(|l| l == line),
        "/metrics does not report {} succeeded jobs",
        rows.len()
    );
    eprintln!("==> /metrics reports {} jobs succeeded", rows.len());

    eprintln!("==> SIGTERM");
    let status = daemon.terminate()?;
    ensure!(
        status.success(),
        "the daemon exited with {status} after SIGTERM"
    );
    TcpListener::bind(daemon.addr)
        .with_context(|| format!("the daemon exited but {} is still taken", daemon.addr))?;
    eprintln!("==> the daemon exited cleanly and released {}", daemon.addr);
    Ok(())
}

async fn request(
    mut client: ProvingEngineClient<Channel>,
    p: Planned,
) -> Result<(AwaitProofResponse, Duration)> {
    let t = Instant::now();
    let response = if p.via_prove {
        client
            .prove(ProveRequest {
                submit: Some(p.submit),
            })
            .await
            .with_context(|| format!("{}: Prove", p.name))?
            .into_inner()
            .result
            .context("Prove answered without a result")?
    } else {
        let job = client
            .submit_proof(p.submit)
            .await
            .with_context(|| format!("{}: SubmitProof", p.name))?
            .into_inner();
        client
            .await_proof(AwaitProofRequest {
                job_id: job.job_id,
                timeout_ms: 0,
            })
            .await
            .with_context(|| format!("{}: AwaitProof", p.name))?
            .into_inner()
    };
    Ok((response, t.elapsed()))
}

/// Checks a response's proofs with both verifiers against locally computed inputs.
fn check(p: &Planned, r: &AwaitProofResponse) -> Result<Duration> {
    ensure!(
        r.status() == await_proof_response::Status::Completed,
        "job {} ended {:?}: {}",
        r.job_id,
        r.status(),
        r.error_message
    );
    let t = Instant::now();
    ensure!(
        r.proof.len() == Proof::SIZE * p.public_inputs.len(),
        "wrong proof length {}",
        r.proof.len()
    );
    let vk = VerifyingKey::read(&r.verifying_key[..]).context("reading the verifying key")?;
    let pvk = prepare_verifying_key(&vk);
    let bp_vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&r.verifying_key[..])
        .context("bellperson reading the verifying key")?;
    let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp_vk);
    for (i, (bytes, inputs)) in r
        .proof
        .chunks(Proof::SIZE)
        .zip(&p.public_inputs)
        .enumerate()
    {
        let proof = Proof::from_bytes(bytes)?;
        ensure!(
            verify_proof(&pvk, &proof, inputs)?,
            "cuzk's verifier rejects partition {i}"
        );
        let bp_proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(bytes)?;
        let ok = bellperson::groth16::verify_proof(&bp_pvk, &bp_proof, inputs)
            .map_err(|e| anyhow::anyhow!("bellperson's verifier failed on partition {i}: {e}"))?;
        ensure!(ok, "bellperson's verifier rejects partition {i}");
    }
    Ok(t.elapsed())
}

fn print_table(rows: &[Row], wall: Duration) {
    let ms = |v: u64| v.to_string();
    println!();
    println!(
        "| circuit | via | job | queue ms | setup ms | synthesis ms | prove ms | daemon verify ms | total ms | client ms | independent verify ms | result |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let r = &row.response;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | verified (cuzk + bellperson) |",
            row.name,
            row.via,
            r.job_id,
            ms(r.queue_wait_ms),
            ms(r.srs_load_ms),
            ms(r.synthesis_ms),
            ms(r.gpu_compute_ms),
            ms(r.verify_ms),
            ms(r.total_ms),
            row.latency.as_millis(),
            row.verify.as_secs_f64() * 1e3
        );
    }
    let proofs: u32 = rows.iter().map(|r| r.response.partitions).sum();
    println!(
        "\n{} requests, {proofs} proofs in {:.2} s: {:.3} s/proof (backend cpu, one daemon)",
        rows.len(),
        wall.as_secs_f64(),
        wall.as_secs_f64() / f64::from(proofs.max(1))
    );
}

/// A one-shot HTTP GET, enough for /metrics.
fn http_get(addr: SocketAddr, path: &str) -> Result<String> {
    let mut stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (head, body) = reply.split_once("\r\n\r\n").context("no HTTP head")?;
    ensure!(
        head.starts_with("HTTP/1.1 200"),
        "GET {path}: {}",
        head.lines().next().unwrap_or("")
    );
    Ok(body.to_string())
}

/// A spawned daemon; killed if still running when dropped (e.g. when a check failed).
struct Daemon {
    child: Child,
    log: PathBuf,
    addr: SocketAddr,
    metrics: SocketAddr,
}

impl Daemon {
    /// Starts the daemon with its embedded configuration on free ports (port 0: the kernel
    /// picks, the ready line says which), output to a log file, stdin closed.
    fn start(binary: &Path, dir: &Path) -> Result<Daemon> {
        let log = dir.join("cuzk-daemon.log");
        let out = std::fs::File::create(&log)?;
        let child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        eprintln!(
            "==> started {} (pid {}), log {}",
            binary.display(),
            child.id(),
            log.display()
        );
        let mut daemon = Daemon {
            child,
            log,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let t = Instant::now();
        let line = daemon.wait_ready()?;
        daemon.addr = field(&line, "address")?;
        daemon.metrics = field(&line, "metrics")?;
        eprintln!(
            "==> ready after {:.2} s: {}",
            t.elapsed().as_secs_f64(),
            line.trim()
        );
        Ok(daemon)
    }

    /// Waits for this process's "ready" line (matched by pid, so no stale line is read).
    fn wait_ready(&mut self) -> Result<String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let pid = format!("pid={}", self.child.id());
        loop {
            let file = std::fs::File::open(&self.log)?;
            for line in std::io::BufReader::new(file).lines() {
                let line = line?;
                if line.contains(" ready ") && line.contains(&pid) {
                    return Ok(line);
                }
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("the daemon exited with {status} before it was ready");
            }
            ensure!(
                Instant::now() < deadline,
                "no ready line within {READY_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn terminate(&mut self) -> Result<ExitStatus> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)?;
        let deadline = Instant::now() + EXIT_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            ensure!(
                Instant::now() < deadline,
                "the daemon did not exit within {EXIT_TIMEOUT:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn print_log_tail(&self) {
        if let Ok(text) = std::fs::read_to_string(&self.log) {
            let lines: Vec<&str> = text.lines().collect();
            eprintln!("--- last lines of {} ---", self.log.display());
            for line in &lines[lines.len().saturating_sub(40)..] {
                eprintln!("{line}");
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The address in `name=IP:port` of a log line.
fn field(line: &str, name: &str) -> Result<SocketAddr> {
    let prefix = format!("{name}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&prefix))
        .with_context(|| format!("no {name}= in the ready line"))?
        .parse()
        .with_context(|| format!("{name}= in the ready line is not an address"))
}
