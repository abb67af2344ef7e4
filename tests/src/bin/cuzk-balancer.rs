//! `cargo xtask balancer`: two CPU daemons behind nginx (configured with the block that
//! docs/operations.md documents), a stream of `Prove` calls through it, and one daemon
//! SIGKILLed while it proves. Every request must end with a proof verified here or a clear
//! error, each answered exactly once; calls the balancer could not complete are retried
//! through it, so they land on the surviving daemon.

use anyhow::{bail, ensure, Context, Result};
use cuzk_circuits::Sha256Preimage;
use cuzk_field::Scalar;
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use cuzk_proto::proving_engine_client::ProvingEngineClient;
use cuzk_proto::{
    await_proof_response, AwaitProofResponse, GetStatusRequest, ProveRequest, SubmitProofRequest,
};
use cuzk_tests::daemon::{connect, wait_serving, READY_TIMEOUT};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// The line in docs/operations.md right above the nginx block this test runs.
const DOC_MARKER: &str = "<!-- cargo xtask balancer runs this block -->";

/// The documented block's example addresses, replaced by the test's loopback ones; each
/// must occur exactly once, so that an edit of the block cannot silently escape the test.
const PLACEHOLDER_LISTEN: &str = "listen 9800 http2;";
const PLACEHOLDER_DAEMONS: [&str; 2] = ["server prover-1:9820 ", "server prover-2:9820 "];

/// The response header the documented block adds: which daemon(s) nginx used.
const UPSTREAM_HEADER: &str = "x-cuzk-upstream";

/// Every request proves a preimage of this length (one circuit, set up once per daemon).
const PREIMAGE_BYTES: usize = 32;

/// Attempts per request before its last error is its answer.
const MAX_ATTEMPTS: u32 = 6;

/// One attempt's limit (a sha256 proof takes about a second here).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

const EXIT_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_MESSAGE: usize = 256 << 20;

#[derive(Debug)]
struct Args {
    daemon: PathBuf,
    nginx: PathBuf,
    doc: PathBuf,
    dir: PathBuf,
    requests: usize,
    concurrency: usize,
}

fn main() -> Result<()> {
    let args = parse_args()?;
    if args.dir.exists() {
        std::fs::remove_dir_all(&args.dir)
            .with_context(|| format!("clearing {}", args.dir.display()))?;
    }
    std::fs::create_dir_all(&args.dir)?;
    let snippet = documented_block(&args.doc)?;

    let started = Instant::now();
    let daemons = [
        Daemon::start("a", &args.daemon, &args.dir)?,
        Daemon::start("b", &args.daemon, &args.dir)?,
    ];
    let listen = free_port()?;
    let conf = nginx_conf(
        &snippet,
        listen,
        [daemons[0].addr, daemons[1].addr],
        &args.dir,
    )?;
    let mut nginx = Nginx::start(&args.nginx, &conf, &args.dir)?;
    let mut daemons = daemons;
    let rejoin = fail_timeout(&snippet)?;
    let outcome = drive(&args, listen, rejoin, &mut daemons, &mut nginx, started);
    if outcome.is_err() {
        for d in &daemons {
            print_tail(&d.log);
        }
        print_tail(&args.dir.join("error.log"));
    }
    outcome
}

fn parse_args() -> Result<Args> {
    const USAGE: &str = "usage: cuzk-balancer --daemon <cuzk-daemon> --nginx <nginx> --doc <operations.md> --dir <work dir> [--requests N] [--concurrency N]";
    let (mut daemon, mut nginx, mut doc, mut dir) = (None, None, None, None);
    let (mut requests, mut concurrency) = (40, 4);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--daemon" => daemon = Some(PathBuf::from(value)),
            "--nginx" => nginx = Some(PathBuf::from(value)),
            "--doc" => doc = Some(PathBuf::from(value)),
            "--dir" => dir = Some(PathBuf::from(value)),
            "--requests" => requests = value.parse().context("--requests")?,
            "--concurrency" => concurrency = value.parse().context("--concurrency")?,
            _ => bail!("{USAGE}"),
        }
    }
    let args = Args {
        daemon: daemon.context(USAGE)?,
        nginx: nginx.context(USAGE)?,
        doc: doc.context(USAGE)?,
        dir: dir.context(USAGE)?,
        requests,
        concurrency,
    };
    ensure!(
        args.requests >= 8 && args.concurrency >= 2,
        "at least 8 requests, 2 at a time, so that one daemon dies while it proves"
    );
    Ok(args)
}

/// The fenced `nginx` block that follows `DOC_MARKER` in the operations guide.
fn documented_block(doc: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(doc).with_context(|| format!("reading {}", doc.display()))?;
    let (_, after) = text
        .split_once(DOC_MARKER)
        .with_context(|| format!("{} has no line {DOC_MARKER:?}", doc.display()))?;
    let mut lines = after.lines().skip_while(|l| l.trim().is_empty());
    ensure!(
        lines.next().map(str::trim) == Some("```nginx"),
        "{DOC_MARKER:?} in {} is not followed by a ```nginx block",
        doc.display()
    );
    let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
    Ok(block.join("\n") + "\n")
}

/// The whole nginx configuration: the documented block, with this run's addresses, inside
/// a main context of our own that keeps nginx in the foreground and every file it writes
/// under `dir`.
fn nginx_conf(
    snippet: &str,
    listen: SocketAddr,
    daemons: [SocketAddr; 2],
    dir: &Path,
) -> Result<String> {
    let mut block = replace_once(
        snippet,
        PLACEHOLDER_LISTEN,
        &format!("listen {listen} http2;"),
    )?;
    for (placeholder, addr) in PLACEHOLDER_DAEMONS.iter().zip(daemons) {
        block = replace_once(&block, placeholder, &format!("server {addr} "))?;
    }
    let d = dir.display();
    Ok(format!(
        r#"# Written by cuzk-balancer: docs/operations.md's block inside a throwaway main context.
daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{
    worker_connections 256;
}}
http {{
    log_format cuzk '$time_iso8601 $status grpc_status=$sent_http_grpc_status upstream=[$upstream_addr] upstream_status=[$upstream_status] $request_time s';
    access_log {d}/access.log cuzk;
    client_body_temp_path {d}/temp/body;
    proxy_temp_path {d}/temp/proxy;
    fastcgi_temp_path {d}/temp/fastcgi;
    uwsgi_temp_path {d}/temp/uwsgi;
    scgi_temp_path {d}/temp/scgi;

{block}}}
"#
    ))
}

/// The largest `fail_timeout=Ns` of the block (nginx's default is 10 s).
fn fail_timeout(block: &str) -> Result<Duration> {
    let mut longest = Duration::from_secs(10);
    for (_, rest) in block
        .match_indices("fail_timeout=")
        .map(|(i, _)| block.split_at(i + 13))
    {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        ensure!(
            rest[digits.len()..].starts_with('s') && !digits.is_empty(),
            "fail_timeout in the documented block: write it in seconds (\"10s\")"
        );
        longest = longest.max(Duration::from_secs(digits.parse()?));
    }
    Ok(longest)
}

fn replace_once(text: &str, from: &str, to: &str) -> Result<String> {
    ensure!(
        text.matches(from).count() == 1,
        "the documented nginx block must contain {from:?} exactly once (the test replaces it)"
    );
    Ok(text.replacen(from, to, 1))
}

/// A loopback port nothing listens on right now.
fn free_port() -> Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// How one request ended.
#[derive(Debug)]
enum Answer {
    Verified {
        /// Index into the daemons.
        daemon: usize,
        /// nginx tried a daemon before this one (it could not be reached).
        passed_over: bool,
    },
    Error(String),
}

/// One retried attempt, for the log.
#[derive(Debug)]
struct Retry {
    request: usize,
    attempt: u32,
    code: Code,
    message: String,
    upstream: String,
}

/// What the callers share.
#[derive(Debug, Default)]
struct Shared {
    next: AtomicUsize,
    answered: AtomicUsize,
    /// Per request, every answer it got (the check: exactly one each).
    answers: Mutex<Vec<Vec<Answer>>>,
    retries: Mutex<Vec<Retry>>,
    /// When the victim was killed.
    killed_at: Mutex<Option<Instant>>,
    /// The killer has returned (killed, gave up or failed): nothing more to wait for.
    killer_over: AtomicBool,
    /// The last requests, one per caller, wait until nginx tries the dead daemon again
    /// (`fail_timeout` after the kill), so that they find it refusing connections.
    tail_from: usize,
    tail_wait: Duration,
}

/// When the victim was killed: requests answered by then, its work in flight.
#[derive(Debug)]
struct Kill {
    answered: usize,
    in_flight: u32,
    queued: u32,
}

fn drive(
    args: &Args,
    listen: SocketAddr,
    fail_timeout: Duration,
    daemons: &mut [Daemon; 2],
    nginx: &mut Nginx,
    started: Instant,
) -> Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let addrs = [daemons[0].addr, daemons[1].addr];
    let victim = Pid::from_raw(daemons[0].child.id() as i32);
    let shared = Arc::new(Shared {
        answers: Mutex::new((0..args.requests).map(|_| Vec::new()).collect()),
        tail_from: args.requests - args.concurrency,
        // nginx keeps a server out while `now - checked <= fail_timeout`, on a clock of whole
        // seconds, with `checked` the second it saw the failure (up to a second after the
        // kill here): two seconds past `fail_timeout` are the least that is always enough,
        // one more is margin for a slow machine.
        tail_wait: fail_timeout + Duration::from_secs(3),
        ..Shared::default()
    });
    let requests: Vec<(SubmitProofRequest, Vec<Scalar>)> = (0..args.requests)
        .map(|i| {
            let preimage: Vec<u8> = (0..PREIMAGE_BYTES).map(|b| (b * 7 + i) as u8).collect();
            let inputs = Sha256Preimage::new(preimage.clone()).public_inputs();
            let submit = SubmitProofRequest {
                circuit: "sha256".into(),
                circuit_inputs: preimage,
                request_id: format!("balancer-{}-{i}", std::process::id()),
                ..SubmitProofRequest::default()
            };
            (submit, inputs)
        })
        .collect();
    let requests = Arc::new(requests);

    let (kill, load_time) = runtime.block_on(async {
        wait_serving(listen).await.context("health through nginx")?;
        eprintln!("==> nginx on {listen} serves; daemon a {}, daemon b {}", addrs[0], addrs[1]);
        let client = ProvingEngineClient::new(connect(listen).await?)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        eprintln!(
            "==> {} Prove calls of sha256 ({PREIMAGE_BYTES} B preimages), {} at a time, through nginx",
            args.requests, args.concurrency
        );
        let t = Instant::now();
        let killer = {
            let shared = shared.clone();
            let after = args.requests / 4;
            tokio::spawn(async move {
                let kill = kill_when_busy(&shared, addrs[0], victim, after).await;
                shared.killer_over.store(true, Ordering::SeqCst);
                kill
            })
        };
        let callers: Vec<_> = (0..args.concurrency)
            .map(|_| tokio::spawn(caller(client.clone(), requests.clone(), shared.clone(), addrs)))
            .collect();
        for c in callers {
            c.await?;
        }
        let kill = killer.await??;
        anyhow::Ok((kill, t.elapsed()))
    })?;

    let status = daemons[0].wait_exit()?;
    ensure!(
        status.signal() == Some(Signal::SIGKILL as i32),
        "daemon a ended with {status}, not by SIGKILL"
    );

    // Tally and check: one answer per request, all verified.
    let answers = std::mem::take(&mut *shared.answers.lock().expect("no caller panicked"));
    let retries = std::mem::take(&mut *shared.retries.lock().expect("no caller panicked"));
    let mut served = [0usize; 2];
    let (mut verified, mut errors, mut passed_over) = (0, 0, 0);
    let mut problems = Vec::new();
    for (i, list) in answers.iter().enumerate() {
        if list.len() != 1 {
            problems.push(format!("request {i} was answered {} times", list.len()));
        }
        for a in list {
            match a {
                Answer::Verified {
                    daemon,
                    passed_over: p,
                } => {
                    verified += 1;
                    served[*daemon] += 1;
                    passed_over += usize::from(*p);
                }
                Answer::Error(e) => {
                    errors += 1;
                    problems.push(format!("request {i}: {e}"));
                }
            }
        }
    }
    for r in &retries {
        eprintln!(
            "    retried request {} after attempt {}: {:?} \"{}\" (nginx used [{}])",
            r.request, r.attempt, r.code, r.message, r.upstream
        );
    }
    // Calls daemon a had taken when it died: retried, with a as the last daemon nginx used.
    let lost = retries
        .iter()
        .filter(|r| r.upstream.rsplit(", ").next() == Some(&addrs[0].to_string()))
        .count();
    let accepted: Vec<usize> = daemons
        .iter()
        .map(Daemon::jobs_accepted)
        .collect::<Result<_>>()?;
    let b_succeeded = daemons[1].jobs_succeeded()?;

    println!();
    println!("| requests | answered exactly once | proofs verified here | retries | nginx passed over a dead daemon | errors | wall s |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {} | {} | {verified} | {} | {passed_over} | {errors} | {:.1} |",
        args.requests,
        answers.iter().filter(|l| l.len() == 1).count(),
        retries.len(),
        load_time.as_secs_f64()
    );
    println!();
    println!(
        "| daemon | address | answered | lost with it, retried | jobs accepted (its log) | end |"
    );
    println!("|---|---|---|---|---|---|");
    println!(
        "| a | {} | {} | {lost} | {} | SIGKILL after {} answers, {} partition(s) proving, {} job(s) queued |",
        addrs[0], served[0], accepted[0], kill.answered, kill.in_flight, kill.queued
    );
    println!(
        "| b | {} | {} | 0 | {} | SIGTERM at the end |",
        addrs[1], served[1], accepted[1]
    );
    println!(
        "\nbalancer check: {} s from the first daemon's start to the last answer",
        started.elapsed().as_secs()
    );

    ensure!(problems.is_empty(), "{}", problems.join("\n"));
    ensure!(
        verified == args.requests,
        "{verified} of {} requests verified",
        args.requests
    );
    ensure!(
        !retries.is_empty(),
        "no call was retried: the kill did not interrupt any call"
    );
    ensure!(
        passed_over > 0,
        "no call found nginx trying the dead daemon again after fail_timeout and passing it on"
    );
    // A call sent the instant a died may be lost before a logged its job, hence a range.
    ensure!(
        served[0] <= accepted[0] && accepted[0] <= served[0] + lost,
        "daemon a accepted {} jobs, answered {} calls and lost {lost}: a job it took is unaccounted for",
        accepted[0],
        served[0]
    );
    ensure!(
        b_succeeded == served[1] as u64 && accepted[1] == served[1],
        "daemon b proved {b_succeeded} jobs and accepted {}, but answered {} calls: work was duplicated or lost",
        accepted[1],
        served[1]
    );

    eprintln!("==> SIGTERM daemon b, stop nginx");
    let status = daemons[1].terminate()?;
    ensure!(
        status.success(),
        "daemon b exited with {status} after SIGTERM"
    );
    nginx.stop()?;
    Ok(())
}

/// Takes requests off the shared list until none is left; proves each through nginx.
async fn caller(
    client: ProvingEngineClient<Channel>,
    requests: Arc<Vec<(SubmitProofRequest, Vec<Scalar>)>>,
    shared: Arc<Shared>,
    daemons: [SocketAddr; 2],
) {
    loop {
        let i = shared.next.fetch_add(1, Ordering::SeqCst);
        let Some((submit, inputs)) = requests.get(i) else {
            return;
        };
        if i >= shared.tail_from {
            wait_for_rejoin(&shared).await;
        }
        let answer = prove_one(client.clone(), i, submit, inputs, &shared, daemons).await;
        let answer = answer.unwrap_or_else(|e| Answer::Error(format!("{e:#}")));
        shared.answers.lock().expect("no caller panicked")[i].push(answer);
        shared.answered.fetch_add(1, Ordering::SeqCst);
    }
}

/// One request: Prove through nginx, retried while the failure says no daemon took it to
/// the end, then the proof verified here.
async fn prove_one(
    mut client: ProvingEngineClient<Channel>,
    i: usize,
    submit: &SubmitProofRequest,
    inputs: &[Scalar],
    shared: &Shared,
    daemons: [SocketAddr; 2],
) -> Result<Answer> {
    let mut attempt = 0;
    let response = loop {
        attempt += 1;
        let mut call = tonic::Request::new(ProveRequest {
            submit: Some(submit.clone()),
        });
        call.set_timeout(CALL_TIMEOUT);
        match client.prove(call).await {
            Ok(response) => break response,
            Err(status) if retryable(&status) && attempt < MAX_ATTEMPTS => {
                shared
                    .retries
                    .lock()
                    .expect("no caller panicked")
                    .push(Retry {
                        request: i,
                        attempt,
                        code: status.code(),
                        message: status.message().to_string(),
                        upstream: upstream(status.metadata()),
                    });
                tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
            }
            Err(status) => bail!(
                "Prove failed after {attempt} attempt(s): {:?} \"{}\" (nginx used [{}])",
                status.code(),
                status.message(),
                upstream(status.metadata())
            ),
        }
    };
    let used = upstream(response.metadata());
    let r = response
        .into_inner()
        .result
        .context("Prove answered without a result")?;
    // The last address nginx names is the one that answered.
    let last = used.rsplit(", ").next().unwrap_or_default();
    let daemon = daemons
        .iter()
        .position(|d| d.to_string() == last)
        .with_context(|| format!("nginx names no known daemon: [{used}]"))?;
    check(&r, inputs)
        .with_context(|| format!("job {} of daemon {}", r.job_id, ["a", "b"][daemon]))?;
    Ok(Answer::Verified {
        daemon,
        passed_over: used.contains(", "),
    })
}

/// Failures after which no daemon holds the job: the daemon was stopping or full, or the
/// balancer found none to reach or lost it before it answered. The documented block answers
/// the balancer's cases UNAVAILABLE. A balancer without its `error_page` lines sends a bare
/// 502/503/504 with an HTML page, which tonic reports as INTERNAL ("invalid compression
/// flag: 60 ... while receiving response with status: 502 Bad Gateway"); those are the same
/// case, so they are retried too.
fn retryable(status: &Status) -> bool {
    match status.code() {
        Code::Unavailable | Code::ResourceExhausted => true,
        Code::Internal | Code::Unknown => ["502", "503", "504"]
            .iter()
            .any(|http| status.message().contains(&format!("status: {http} "))),
        _ => false,
    }
}

fn upstream(metadata: &tonic::metadata::MetadataMap) -> String {
    metadata
        .get(UPSTREAM_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Returns once nginx will try the dead daemon again, or when there was no kill to wait on.
async fn wait_for_rejoin(shared: &Shared) {
    loop {
        let killed_at = *shared.killed_at.lock().expect("no caller panicked");
        if let Some(t) = killed_at {
            let due = (t + shared.tail_wait).saturating_duration_since(Instant::now());
            tokio::time::sleep(due).await;
            return;
        }
        if shared.killer_over.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kills the victim once enough requests were answered and it has work in flight, so that
/// calls are lost mid-proof, not merely refused.
async fn kill_when_busy(
    shared: &Shared,
    victim_addr: SocketAddr,
    victim: Pid,
    after: usize,
) -> Result<Kill> {
    let mut client = ProvingEngineClient::new(connect(victim_addr).await?);
    loop {
        let answered = shared.answered.load(Ordering::SeqCst);
        ensure!(
            answered < shared.tail_from,
            "daemon a had no work in flight from {after} answers to {answered}"
        );
        if answered >= after {
            let s = client.get_status(GetStatusRequest {}).await?.into_inner();
            let queued: u32 = s.queues.iter().map(|q| q.pending).sum();
            if s.partitions_in_flight > 0 || queued > 0 {
                kill(victim, Signal::SIGKILL).context("SIGKILL daemon a")?;
                *shared.killed_at.lock().expect("no caller panicked") = Some(Instant::now());
                eprintln!(
                    "==> SIGKILL daemon a after {answered} answers ({} partition(s) in flight, {queued} queued)",
                    s.partitions_in_flight
                );
                return Ok(Kill {
                    answered,
                    in_flight: s.partitions_in_flight,
                    queued,
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Checks the daemon's verdict and the proof itself, with cuzk's verifier and bellperson's,
/// against public inputs computed here.
fn check(r: &AwaitProofResponse, inputs: &[Scalar]) -> Result<()> {
    ensure!(
        r.status() == await_proof_response::Status::Completed,
        "job ended {:?}: {}",
        r.status(),
        r.error_message
    );
    ensure!(r.verified, "the daemon did not verify its proof");
    ensure!(
        r.proof.len() == Proof::SIZE,
        "proof of {} bytes",
        r.proof.len()
    );
    let vk = VerifyingKey::read(&r.verifying_key[..]).context("reading the verifying key")?;
    let proof = Proof::from_bytes(&r.proof)?;
    ensure!(
        verify_proof(&prepare_verifying_key(&vk), &proof, inputs)?,
        "cuzk's verifier rejects the proof"
    );
    let bp_vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&r.verifying_key[..])
        .context("bellperson reading the verifying key")?;
    let bp_proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(&r.proof[..])?;
    let ok = bellperson::groth16::verify_proof(
        &bellperson::groth16::prepare_verifying_key(&bp_vk),
        &bp_proof,
        inputs,
    )
    .map_err(|e| anyhow::anyhow!("bellperson's verifier failed: {e}"))?;
    ensure!(ok, "bellperson's verifier rejects the proof");
    Ok(())
}

/// A spawned daemon on free loopback ports; SIGKILLed if still running when dropped.
#[derive(Debug)]
struct Daemon {
    name: &'static str,
    child: Child,
    log: PathBuf,
    addr: SocketAddr,
    metrics: SocketAddr,
}

impl Daemon {
    fn start(name: &'static str, binary: &Path, dir: &Path) -> Result<Daemon> {
        let log = dir.join(format!("daemon-{name}.log"));
        let out = std::fs::File::create(&log)?;
        let child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut daemon = Daemon {
            name,
            child,
            log,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let line = daemon.wait_ready()?;
        daemon.addr = field(&line, "address")?;
        daemon.metrics = field(&line, "metrics")?;
        eprintln!(
            "==> daemon {name} (pid {}) serves {}, metrics {}, log {}",
            daemon.child.id(),
            daemon.addr,
            daemon.metrics,
            daemon.log.display()
        );
        Ok(daemon)
    }

    /// Waits for this process's "ready" line (matched by pid).
    fn wait_ready(&mut self) -> Result<String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let pid = format!("pid={}", self.child.id());
        loop {
            let text = std::fs::read_to_string(&self.log)?;
            if let Some(line) = text
                .lines()
                .find(|l| l.contains(" ready ") && l.contains(&pid))
            {
                return Ok(line.to_string());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "daemon {} exited with {status} before it was ready",
                    self.name
                );
            }
            ensure!(
                Instant::now() < deadline,
                "daemon {}: no ready line within {READY_TIMEOUT:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// "job accepted" lines in its log: jobs it took, whether or not it finished them.
    fn jobs_accepted(&self) -> Result<usize> {
        let text = std::fs::read_to_string(&self.log)?;
        Ok(text.lines().filter(|l| l.contains("job accepted")).count())
    }

    /// `cuzk_jobs_total{outcome="succeeded"}` from its /metrics.
    fn jobs_succeeded(&self) -> Result<u64> {
        let body = http_get(self.metrics, "/metrics")?;
        let prefix = "cuzk_jobs_total{outcome=\"succeeded\"} ";
        let value = body
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .with_context(|| format!("daemon {}'s /metrics has no {prefix:?}", self.name))?;
        Ok(value.trim().parse::<f64>()? as u64)
    }

    fn wait_exit(&mut self) -> Result<ExitStatus> {
        let deadline = Instant::now() + EXIT_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            ensure!(
                Instant::now() < deadline,
                "daemon {} did not exit within {EXIT_TIMEOUT:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn terminate(&mut self) -> Result<ExitStatus> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM)?;
        self.wait_exit()
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

/// nginx in the foreground (`daemon off`), in a process group of its own so that its
/// workers go with it.
#[derive(Debug)]
struct Nginx {
    child: Child,
}

impl Nginx {
    fn start(binary: &Path, conf: &str, dir: &Path) -> Result<Nginx> {
        for sub in ["body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            std::fs::create_dir_all(dir.join("temp").join(sub))?;
        }
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf)?;
        let args = |cmd: &mut Command| {
            cmd.arg("-p")
                .arg(dir)
                .arg("-c")
                .arg(&path)
                // -e: the start-up error log, before the configuration names one.
                .arg("-e")
                .arg(dir.join("error.log"));
        };
        let mut test = Command::new(binary);
        args(&mut test);
        let out = test
            .arg("-t")
            .output()
            .with_context(|| format!("running {} -t", binary.display()))?;
        ensure!(
            out.status.success(),
            "nginx rejects {}:\n{}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let log = std::fs::File::create(dir.join("nginx.out"))?;
        let mut cmd = Command::new(binary);
        args(&mut cmd);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        eprintln!("==> nginx (pid {}) with {}", child.id(), path.display());
        Ok(Nginx { child })
    }

    /// Fast shutdown (SIGTERM: the master stops its workers), then waits.
    fn stop(&mut self) -> Result<()> {
        kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait()?.is_none() {
            ensure!(
                Instant::now() < deadline,
                "nginx did not stop within 10 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) && self.stop().is_err() {
            // The whole group: the master and any worker it left.
            let _ = kill(Pid::from_raw(-(self.child.id() as i32)), Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
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

/// The address in `name=IP:port` of a log line.
fn field(line: &str, name: &str) -> Result<SocketAddr> {
    let prefix = format!("{name}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&prefix))
        .with_context(|| format!("no {name}= in the ready line"))?
        .parse()
        .with_context(|| format!("{name}= in the ready line is not an address"))
}

fn print_tail(path: &Path) {
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .collect();
    eprintln!("--- last lines of {} ---", path.display());
    for line in &lines[lines.len().saturating_sub(30)..] {
        eprintln!("{line}");
    }
}
