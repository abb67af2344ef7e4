//! Shared by the daemon's integration tests: spawning the built `cuzk-daemon` with a
//! configuration, reading its ready line, clients, signals, and /proc readings.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

pub mod raw;

use cuzk_daemon::proto::proving_engine_client::ProvingEngineClient;
use cuzk_daemon::proto::{
    await_proof_response, AwaitProofRequest, AwaitProofResponse, SubmitProofRequest,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::io::Read;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tonic::transport::Channel;

/// The daemon cargo built beside these tests.
pub const BINARY: &str = env!("CARGO_BIN_EXE_cuzk-daemon");

/// The daemon under test: `$CUZK_DAEMON_BIN` when set (a bundle's `run-tests` points it at
/// the bundle's daemon, since a copied test binary has no cargo build beside it), else the
/// one cargo built. Fails when it does not exist, rather than skipping a test.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("CUZK_DAEMON_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(BINARY));
    assert!(
        path.exists(),
        "no cuzk-daemon at {} (set CUZK_DAEMON_BIN to the daemon to test)",
        path.display()
    );
    path
}

/// Ready within this long even on a loaded 2-core machine.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A spawned daemon with its own directory (configuration, log). Killed when dropped.
#[derive(Debug)]
pub struct TestDaemon {
    pub child: Child,
    pub dir: TempDir,
    pub log: PathBuf,
    pub config: PathBuf,
    /// From the ready line (after [`TestDaemon::wait_ready`]).
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    pub pid: u32,
}

/// How to start one.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Configuration text written to `cuzk.toml` and passed with --config.
    pub config: String,
    /// Extra arguments (e.g. `--listen`); by default the gRPC and metrics ports are free
    /// ports the kernel picks (port 0).
    pub args: Vec<String>,
    /// Run under `setsid`: a new session, as a detached daemon runs.
    pub detached: bool,
}

impl Launch {
    /// `config` on kernel-picked loopback ports.
    pub fn new(config: &str) -> Launch {
        Launch {
            config: config.to_string(),
            args: ["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"]
                .map(String::from)
                .to_vec(),
            detached: false,
        }
    }

    /// The same with `args` instead of the default port flags.
    pub fn args(mut self, args: &[&str]) -> Launch {
        self.args = args.iter().map(|a| a.to_string()).collect();
        self
    }

    /// Started under `setsid`.
    pub fn detached(mut self) -> Launch {
        self.detached = true;
        self
    }

    /// Spawns without waiting: stdin from /dev/null, stdout and stderr to the log file.
    pub fn spawn(self) -> TestDaemon {
        let dir = tempfile::tempdir().unwrap();
        self.spawn_in(dir)
    }

    /// Spawns in an existing directory (to reuse its configuration file).
    pub fn spawn_in(self, dir: TempDir) -> TestDaemon {
        let config = dir.path().join("cuzk.toml");
        std::fs::write(&config, &self.config).unwrap();
        let log = dir.path().join(format!("daemon-{}.log", unique()));
        let out = std::fs::File::create(&log).unwrap();
        let mut cmd = if self.detached {
            let mut c = Command::new("setsid");
            c.arg(binary());
            c
        } else {
            Command::new(binary())
        };
        cmd.arg("--config")
            .arg(&config)
            .args(&self.args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = cmd.spawn().expect("spawning cuzk-daemon");
        let pid = child.id();
        TestDaemon {
            child,
            dir,
            log,
            config,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            metrics: None,
            pid,
        }
    }

    /// Spawns and waits for the ready line.
    pub fn start(self) -> TestDaemon {
        let mut d = self.spawn();
        d.wait_ready();
        d
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

impl TestDaemon {
    /// The log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the ready line and reads the addresses and pid from it.
    pub fn wait_ready(&mut self) {
        if let Err(text) = self.try_ready() {
            panic!("{text}");
        }
    }

    /// Waits for the ready line and reads the addresses and pid from it; `Err` with the log
    /// when the daemon exited first. Fails the test after `READY_TIMEOUT` without either.
    pub fn try_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let text = self.log_text();
            // The daemon's own ready line (a GPU's "device ready" line comes before it).
            let ready = |l: &&str| l.contains(" ready ") && l.contains(" address=");
            if let Some(line) = text.lines().find(ready) {
                self.addr = field(line, "address").parse().unwrap();
                self.metrics = field(line, "metrics").parse().ok();
                self.pid = field(line, "pid").parse().unwrap();
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the daemon exited with {status} before ready:\n{text}"
                ));
            }
            assert!(
                Instant::now() < deadline,
                "no ready line within {READY_TIMEOUT:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` to the daemon.
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid as i32), signal).unwrap();
    }

    /// Stops the daemon as an operator does (SIGTERM: accepted jobs end, parameter files
    /// being written are finished) and waits for its clean exit, failing after 120 s.
    pub fn stop(mut self) {
        self.signal(Signal::SIGTERM);
        let status = self.wait_exit(Duration::from_secs(120));
        assert!(
            status.success(),
            "the daemon exited with {status}:\n{}",
            self.log_text()
        );
    }

    /// Waits for the exit, failing after `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon still runs after {limit:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A client of the proving service.
    pub async fn client(&self) -> ProvingEngineClient<Channel> {
        ProvingEngineClient::new(channel(self.addr).await)
            .max_decoding_message_size(128 << 20)
            .max_encoding_message_size(1 << 30)
    }

    /// A field of /proc/<pid>/status in bytes (VmRSS, VmHWM).
    pub fn proc_status_bytes(&self, name: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in /proc status"));
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }
}

/// Kills the daemon at once. A test whose daemon generates parameters that a later daemon
/// over the same folder loads calls [`TestDaemon::stop`] instead: a killed daemon leaves a
/// generated circuit's `.params` unwritten, so the next one generates new parameters, whose
/// `.vk` differs from the one this process's filecoin-proofs has cached for that circuit.
impl Drop for TestDaemon {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `name=value` from a log line.
pub fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}=");
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {name}= in {line:?}"))
}

/// A connected channel to `addr`.
pub async fn channel(addr: SocketAddr) -> Channel {
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap_or_else(|e| panic!("connecting to {addr}: {e}"))
}

/// A loopback port free right now (for tests that need a fixed address in a file).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    // Below the kernel's ephemeral range, where it picks the local ports of outgoing
    // connections and of `bind(0)`: a connection of a test running beside can then never take
    // a port between a daemon's kill and its restart on it. Each call takes the next one.
    const FIRST: u16 = 10_000;
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    let span = ephemeral.saturating_sub(FIRST).max(1);
    // Spread over the span by process, so two test programs at once start apart.
    let start = (std::process::id() % u32::from(span)) as u16;
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + start.wrapping_add(n) % span;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A synthetic-porep request of 2^`log2` constraints.
pub fn synthetic(log2: u64, seed: u64, partitions: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        circuit: "synthetic-porep".into(),
        circuit_fields: [
            ("log2_constraints".to_string(), log2),
            ("seed".to_string(), seed),
            ("partitions".to_string(), partitions),
        ]
        .into(),
        ..SubmitProofRequest::default()
    }
}

/// A sha256 request for `preimage`.
pub fn sha256(preimage: &[u8]) -> SubmitProofRequest {
    SubmitProofRequest {
        circuit: "sha256".into(),
        circuit_inputs: preimage.to_vec(),
        ..SubmitProofRequest::default()
    }
}

/// Submits and awaits one request.
pub async fn prove(
    client: &mut ProvingEngineClient<Channel>,
    submit: SubmitProofRequest,
) -> AwaitProofResponse {
    let job = client.submit_proof(submit).await.unwrap().into_inner();
    client
        .await_proof(AwaitProofRequest {
            job_id: job.job_id,
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner()
}

/// Waits until some job runs (a lane took it), as GetStatus's queues say; fails after 10 s.
pub async fn until_running(client: &mut ProvingEngineClient<Channel>) {
    for _ in 0..1000 {
        let s = client
            .get_status(cuzk_daemon::proto::GetStatusRequest {})
            .await
            .unwrap()
            .into_inner();
        if s.queues.iter().any(|q| q.in_progress > 0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no job started within 10 s");
}

/// Asserts a response is a completed job.
pub fn assert_completed(r: &AwaitProofResponse) {
    assert_eq!(
        r.status(),
        await_proof_response::Status::Completed,
        "job {}: {}",
        r.job_id,
        r.error_message
    );
}

/// A one-shot HTTP GET: status line and body.
pub fn http_get(addr: SocketAddr, path: &str, auth: Option<&str>) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}\r\n").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// Whether something accepts connections at `addr`.
pub fn accepts(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
}

/// Whether `path` names an existing file.
pub fn exists(path: &Path) -> bool {
    path.is_file()
}
