//! The `cuzk` binary against a daemon served in this process: wait-ready (and its
//! timeout), status, prove to a file (the proof verifies), prove --verify, and a bench sweep
//! (with the daemon's resident memory from its metrics).

use cuzk_circuits::Sha256Preimage;
use cuzk_daemon::server::{self, Listeners};
use cuzk_daemon::Config;
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Command, Output};
use tokio::sync::oneshot;

const CUZK: &str = env!("CARGO_BIN_EXE_cuzk");

/// A daemon on a free loopback port, stopped when dropped.
struct Daemon {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Daemon {
    fn start() -> Daemon {
        let config = "[server]\nlisten = \"127.0.0.1:0\"\nmetrics_listen = \"\"\n\
                      [memory]\nhost_budget = \"2GiB\"\n";
        let settings = Config::parse(config, Path::new("test.toml"))
            .unwrap()
            .settings()
            .unwrap();
        let listeners = Listeners::bind(&settings).unwrap();
        let addr = listeners.grpc_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(server::run(settings, listeners, async {
                let _ = stopped.await;
                "test end"
            }))
            .unwrap();
        });
        Daemon {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        let _ = self.thread.take().map(|t| t.join());
    }
}

fn cuzk(addr: SocketAddr, args: &[&str]) -> Output {
    Command::new(CUZK)
        .arg("--addr")
        .arg(addr.to_string())
        .args(args)
        .env_remove("CUZK_TOKEN")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn wait_ready_status_and_prove() {
    let daemon = Daemon::start();
    let ready = cuzk(daemon.addr, &["wait-ready", "--timeout", "30s"]);
    assert!(ready.status.success(), "{}", text(&ready));

    let dir = tempfile::tempdir().unwrap();
    let (proof, vk) = (dir.path().join("proof.bin"), dir.path().join("vk.bin"));
    let out = cuzk(
        daemon.addr,
        &[
            "prove",
            "--circuit",
            "sha256",
            "--input-hex",
            "616263",
            "--out",
            proof.to_str().unwrap(),
            "--vk-out",
            vk.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let proof = Proof::from_bytes(&std::fs::read(proof).unwrap()).unwrap();
    let vk = VerifyingKey::read(&std::fs::read(vk).unwrap()[..]).unwrap();
    let inputs = Sha256Preimage::new(b"abc".to_vec()).public_inputs();
    assert!(verify_proof(&prepare_verifying_key(&vk), &proof, &inputs).unwrap());

    // A request file, with a flag overriding one of its fields.
    let request = dir.path().join("request.toml");
    std::fs::write(
        &request,
        "circuit = \"synthetic-porep\"\n[fields]\nlog2_constraints = 20\npartitions = 2\n",
    )
    .unwrap();
    let out = cuzk(
        daemon.addr,
        &[
            "prove",
            "--request",
            request.to_str().unwrap(),
            "--field",
            "log2_constraints=8",
            "--verify",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("2 verified here"), "{}", text(&out));
    let hex = String::from_utf8_lossy(&out.stdout);
    assert_eq!(hex.trim().len(), 2 * 2 * Proof::SIZE, "two proofs in hex");

    let bad = cuzk(daemon.addr, &["prove", "--circuit", "no-such-circuit"]);
    assert!(!bad.status.success());
    assert!(text(&bad).contains("no-such-circuit"), "{}", text(&bad));

    let status = cuzk(daemon.addr, &["status"]);
    assert!(status.status.success(), "{}", text(&status));
    let s = text(&status);
    assert!(
        s.contains("backend       cpu") && s.contains("2 completed"),
        "{s}"
    );
}

#[test]
fn wait_ready_gives_up_at_its_timeout() {
    // A port nobody serves.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let t = std::time::Instant::now();
    let out = cuzk(addr, &["wait-ready", "--timeout", "1s"]);
    assert!(!out.status.success());
    assert!(t.elapsed() < std::time::Duration::from_secs(15));
    assert!(text(&out).contains("not ready after"), "{}", text(&out));
}

#[test]
fn bench_sweeps_concurrency_and_reports_percentiles() {
    let daemon = Daemon::start();
    let out = cuzk(
        daemon.addr,
        &[
            "bench",
            "-c",
            "1,2",
            "-j",
            "3",
            "--circuit",
            "synthetic-porep",
            "--field",
            "log2_constraints=9",
        ],
    );
    let s = text(&out);
    assert!(out.status.success(), "{s}");
    for needle in [
        "| phase | mean ms",
        "| prove |",
        "s/proof",
        "p50",
        "p95",
        "sweep:",
        "| 2 | 3 | 3 | 0 |",
        "RSS peak GiB",
        "3/3 done",
    ] {
        assert!(s.contains(needle), "missing {needle:?} in:\n{s}");
    }
}

#[test]
fn preload_and_evict_say_what_happened() {
    let daemon = Daemon::start();
    // Not set up, not configured: refused, naming the id.
    let out = cuzk(daemon.addr, &["preload", "sha256-preimage-3B"]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("sha256-preimage-3B")
            && text(&out).contains("is not one this daemon preloads"),
        "{}",
        text(&out)
    );
    let proved = cuzk(
        daemon.addr,
        &["prove", "--circuit", "sha256", "--input-hex", "616263"],
    );
    assert!(proved.status.success(), "{}", text(&proved));
    // Set up by that proof: preloaded, evicted, then no longer known.
    let out = cuzk(daemon.addr, &["preload", "sha256-preimage-3B"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("sha256-preimage-3B: already loaded"),
        "{}",
        text(&out)
    );
    let out = cuzk(daemon.addr, &["evict", "sha256-preimage-3B"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("sha256-preimage-3B: evicted,"),
        "{}",
        text(&out)
    );
    let out = cuzk(daemon.addr, &["evict", "sha256-preimage-3B"]);
    assert!(text(&out).contains("was not loaded"), "{}", text(&out));
}
