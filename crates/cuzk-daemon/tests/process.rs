//! The daemon as a process: a taken port, detached start, start-up failures, SIGTERM and
//! SIGINT (also under load), a second daemon on the same configuration, restart after a
//! kill. Each spawns the built binary.

mod common;

use common::{accepts, assert_completed, free_port, prove, sha256, synthetic, Launch, TestDaemon};
use cuzk_daemon::proto::{await_proof_response::Status as Outcome, AwaitProofRequest};
use nix::sys::signal::Signal;
use std::net::TcpListener;
use std::time::{Duration, Instant};

const CONFIG: &str = "[memory]\nhost_budget = \"2GiB\"\n[server]\nshutdown_grace_secs = 5\n";

/// A configuration with fixed ports, as an operator's file has.
fn fixed_ports() -> String {
    format!(
        "[memory]\nhost_budget = \"2GiB\"\n[server]\nlisten = \"127.0.0.1:{}\"\nmetrics_listen = \"127.0.0.1:{}\"\n",
        free_port(),
        free_port()
    )
}

#[test]
fn a_taken_port_fails_at_once_naming_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let t = Instant::now();
    let mut d = Launch::new(CONFIG)
        .args(&["--listen", &addr, "--metrics-listen", ""])
        .spawn();
    let status = d.wait_exit(Duration::from_secs(10));
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert!(!status.success());
    let log = d.log_text();
    assert!(log.contains(&addr) && log.contains("in use"), "{log}");
    assert!(!log.contains(" ready "), "{log}");
}

#[test]
fn detached_it_logs_ready_serves_ignores_sighup_and_stops_on_sigterm() {
    let mut d = Launch::new(CONFIG).detached().start();
    // setsid made it a session leader: its session id is its pid.
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", d.pid)).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let session: u32 = after_name
        .split_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(session, d.pid, "not in a session of its own: {stat}");

    d.signal(Signal::SIGHUP);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut client = d.client().await;
        assert_completed(&prove(&mut client, sha256(b"detached")).await);
    });
    assert!(d.log_text().contains("SIGHUP ignored"));
    d.signal(Signal::SIGTERM);
    assert!(
        d.wait_exit(Duration::from_secs(30)).success(),
        "{}",
        d.log_text()
    );
    assert!(!accepts(d.addr), "the port is still open");
    TcpListener::bind(d.addr).expect("the port is released");
}

#[test]
fn a_detached_start_up_failure_leaves_its_reason_in_the_log() {
    let bad = format!("{CONFIG}[[preload]]\ncircuit = \"no-such-circuit\"\n");
    let mut d = Launch::new(&bad).detached().spawn();
    assert!(!d.wait_exit(Duration::from_secs(30)).success());
    let log = d.log_text();
    assert!(
        log.contains("no-such-circuit") && log.contains("ERROR"),
        "{log}"
    );

    let mut d = Launch::new("[server]\nlisten = \"nowhere\"\n")
        .args(&[])
        .detached()
        .spawn();
    assert!(!d.wait_exit(Duration::from_secs(30)).success());
    assert!(d.log_text().contains("server.listen"), "{}", d.log_text());
}

#[test]
fn sigint_stops_an_idle_daemon_cleanly() {
    let mut d = Launch::new(CONFIG).start();
    d.signal(Signal::SIGINT);
    assert!(
        d.wait_exit(Duration::from_secs(30)).success(),
        "{}",
        d.log_text()
    );
    assert!(d.log_text().contains("signal=\"SIGINT\""));
    TcpListener::bind(d.addr).expect("the port is released");
}

#[test]
fn sigterm_under_load_answers_every_job_and_exits_zero() {
    // No grace: jobs not done at the signal are stopped, and their callers told so.
    let config = "[memory]\nhost_budget = \"2GiB\"\n[server]\nshutdown_grace_secs = 0\n";
    let mut d = Launch::new(config).start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let outcomes = rt.block_on(async {
        let mut client = d.client().await;
        let mut waits = Vec::new();
        for seed in 0..6 {
            let job = client
                .submit_proof(synthetic(14, seed, 2))
                .await
                .unwrap()
                .into_inner();
            let mut c = client.clone();
            waits.push(tokio::spawn(async move {
                c.await_proof(AwaitProofRequest {
                    job_id: job.job_id,
                    timeout_ms: 0,
                })
                .await
            }));
        }
        // Signal once the first job has started, while the rest wait behind it.
        common::until_running(&mut client).await;
        d.signal(Signal::SIGTERM);
        let mut outcomes = Vec::new();
        for w in waits {
            outcomes.push(
                w.await
                    .unwrap()
                    .expect("every waiting call gets an answer")
                    .into_inner(),
            );
        }
        outcomes
    });
    for r in &outcomes {
        match r.status() {
            Outcome::Completed => {}
            Outcome::Failed => assert!(r.error_message.contains("shutdown"), "{}", r.error_message),
            other => panic!("job {} ended {other:?}", r.job_id),
        }
    }
    assert!(
        outcomes.iter().any(|r| r.status() == Outcome::Failed),
        "the signal came too late to test anything"
    );
    assert!(
        d.wait_exit(Duration::from_secs(60)).success(),
        "{}",
        d.log_text()
    );
    TcpListener::bind(d.addr).expect("the port is released");
}

#[test]
fn a_second_daemon_on_the_same_configuration_is_refused() {
    let (first, config) = start_on_fixed_ports();
    let mut second = Launch::new(&config).args(&[]).spawn();
    assert!(!second.wait_exit(Duration::from_secs(10)).success());
    let log = second.log_text();
    assert!(
        log.contains(&first.addr.to_string()) && log.contains("in use"),
        "{log}"
    );
    assert!(accepts(first.addr), "the first daemon must be unaffected");
}

#[test]
fn a_restart_right_after_a_kill_binds_again() {
    let (mut first, config) = start_on_fixed_ports();
    let rt = tokio::runtime::Runtime::new().unwrap();
    // A live connection at the moment of the kill leaves sockets behind in TIME_WAIT.
    let _client = rt.block_on(first.client());
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let second = restart(&config, first.addr);
    assert_eq!(second.addr, first.addr);
    rt.block_on(async {
        let mut client = second.client().await;
        assert_completed(&prove(&mut client, synthetic(8, 0, 1)).await);
    });
}

/// A daemon started on fixed ports (`fixed_ports`), and its configuration. A port found free
/// can be taken by another program before the daemon binds it: then new ports, up to three
/// times, each refusal printed with what held the port.
fn start_on_fixed_ports() -> (TestDaemon, String) {
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let config = fixed_ports();
        let mut d = Launch::new(&config).args(&[]).spawn();
        match d.try_ready() {
            Ok(()) => return (d, config),
            Err(log) if log.contains("in use") => {
                let port = config_port(&config);
                let sockets = sockets_on(port);
                eprintln!("start refused:\n{log}\nsockets on port {port}:\n{sockets}");
                reasons.push(format!("{log}\n{sockets}"));
            }
            Err(log) => panic!("{log}"),
        }
    }
    panic!(
        "no start on fixed ports in three tries:\n{}",
        reasons.join("\n---\n")
    );
}

/// The gRPC port of a `fixed_ports` configuration.
fn config_port(config: &str) -> u16 {
    let line = config.lines().find(|l| l.starts_with("listen")).unwrap();
    line.trim_end_matches('"')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Starts a daemon on `config` as a supervisor restarts one: up to three tries 200 ms apart.
/// A try that finds `addr` in use prints the kernel's sockets on that port (state, remote
/// end), so that a failure names what held it.
fn restart(config: &str, addr: std::net::SocketAddr) -> TestDaemon {
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let mut d = Launch::new(config).args(&[]).spawn();
        match d.try_ready() {
            Ok(()) => return d,
            Err(log) => {
                let sockets = sockets_on(addr.port());
                eprintln!(
                    "restart refused:\n{log}\nsockets on port {}:\n{sockets}",
                    addr.port()
                );
                reasons.push(format!("{log}\n{sockets}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    panic!(
        "no restart on {addr} in three tries:\n{}",
        reasons.join("\n---\n")
    );
}

/// The kernel's TCP sockets whose local port is `port` (/proc/net/tcp and tcp6): the
/// addresses, the state named, and the processes holding each (pid and command line).
fn sockets_on(port: u16) -> String {
    let states = [
        "",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
    ];
    let wanted = format!(":{port:04X}");
    let mut out = String::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 || !cols[1].ends_with(&wanted) {
                continue;
            }
            let state = usize::from_str_radix(cols[3], 16).unwrap_or(0);
            let name = states.get(state).copied().unwrap_or("?");
            let owners = holders(cols[9]);
            out.push_str(&format!(
                "{} -> {} {name} held by [{owners}]\n",
                cols[1], cols[2]
            ));
        }
    }
    out
}

/// The processes with socket inode `inode` open: "pid command line" each.
fn holders(inode: &str) -> String {
    let target = format!("socket:[{inode}]");
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return String::new();
    };
    for p in procs.flatten() {
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == target));
        if holds {
            let cmd = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            found.push(format!(
                "{} {}",
                p.file_name().to_string_lossy(),
                cmd.trim()
            ));
        }
    }
    found.join("; ")
}

#[test]
fn backend_auto_falls_back_to_the_cpu_and_cuda_without_a_gpu_fails_naming_it() {
    if matches!(cuzk_gpu::device_count(), Ok(n) if n > 0) {
        // A GPU host resolves "auto" to the CUDA backend; the GPU tests of cuzk-gpu and
        // run-e2e cover that side.
        eprintln!("NOTE: a CUDA GPU is present: the no-GPU fallback cannot be observed here");
        return;
    }
    let mut d = Launch::new(CONFIG).start();
    let log = d.log_text();
    assert!(log.contains("proving on the CPU"), "{log}");
    assert!(log.contains("backend=\"cpu\""), "{log}");
    d.signal(Signal::SIGTERM);
    assert!(d.wait_exit(Duration::from_secs(30)).success());

    let cuda = format!("{CONFIG}[prover]\nbackend = \"cuda\"\n");
    let mut d = Launch::new(&cuda).spawn();
    assert!(!d.wait_exit(Duration::from_secs(30)).success());
    let log = d.log_text();
    assert!(
        log.contains("CUDA backend") && log.contains("no CUDA device"),
        "{log}"
    );
    assert!(!log.contains(" ready "), "{log}");
}
