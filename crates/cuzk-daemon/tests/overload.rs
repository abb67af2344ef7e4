//! Overload: 50 submissions that would need far more than the host budget all at once.
//! Every one completes or is refused with RESOURCE_EXHAUSTED; partitions in flight never
//! exceed what the budget admits; the daemon's peak RSS stays within its baseline plus
//! the budget (read from /proc, not from the budget's own ledger).

mod common;

use common::{assert_completed, prove, synthetic, Launch};
use cuzk_daemon::proto::{AwaitProofRequest, GetStatusRequest};
use cuzk_sched::plugin::Shape;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tonic::Code;

const LOG2: u32 = 12;
const SUBMISSIONS: u64 = 50;
const MAX_QUEUED: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_submissions_over_a_small_budget_complete_or_are_refused() {
    let n = 1usize << LOG2;
    // The scheduler's own estimate for one partition of this circuit (exact for it).
    let per_partition = Shape {
        constraints: n,
        inputs: 2,
        aux: n,
    }
    .cpu_prover_bytes();
    // Room for two partitions at once, not three.
    let budget = per_partition * 5 / 2;
    let admits = budget / per_partition;
    assert_eq!(admits, 2);
    assert!(SUBMISSIONS * per_partition >= 3 * budget);
    let config = format!(
        "[memory]\nhost_budget = \"{budget}\"\n\
         [prover]\nworkers_per_device = 2\n\
         [scheduler]\nsynthesis_workers = 2\nlookahead = 2\nmax_queued_jobs = {MAX_QUEUED}\n"
    );
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;

    // Baseline: the circuit set up and one proof made, so parameters, thread stacks and
    // allocator arenas are already counted.
    assert_completed(&prove(&mut client, synthetic(LOG2.into(), 1_000, 1)).await);
    let baseline = daemon.proc_status_bytes("VmRSS");
    // Resets the kernel's peak-RSS mark (VmHWM) to the current RSS.
    let reset = std::fs::write(format!("/proc/{}/clear_refs", daemon.pid), "5").is_ok();

    // Sample partitions in flight and RSS while the load runs.
    let done = Arc::new(AtomicBool::new(false));
    let peak_in_flight = Arc::new(AtomicU32::new(0));
    let sampler = {
        let (done, peak) = (Arc::clone(&done), Arc::clone(&peak_in_flight));
        let mut client = client.clone();
        let status_path = format!("/proc/{}/status", daemon.pid);
        tokio::spawn(async move {
            let mut peak_rss = 0u64;
            while !done.load(Ordering::SeqCst) {
                let s = client
                    .get_status(GetStatusRequest {})
                    .await
                    .unwrap()
                    .into_inner();
                peak.fetch_max(s.partitions_in_flight, Ordering::SeqCst);
                peak_rss = peak_rss.max(vm_rss(&status_path));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            peak_rss
        })
    };

    let mut tasks = Vec::new();
    for seed in 0..SUBMISSIONS {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            match client.submit_proof(synthetic(LOG2.into(), seed, 1)).await {
                Ok(job) => {
                    let r = client
                        .await_proof(AwaitProofRequest {
                            job_id: job.into_inner().job_id,
                            timeout_ms: 0,
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    assert_completed(&r);
                    true
                }
                Err(status) => {
                    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                    false
                }
            }
        }));
    }
    let mut completed = 0;
    for t in tasks {
        completed += usize::from(t.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let sampled_rss = sampler.await.unwrap();
    let refused = SUBMISSIONS as usize - completed;
    assert!(completed >= MAX_QUEUED, "only {completed} completed");
    assert!(
        refused > 0,
        "nothing was refused: the test did not overload the queue"
    );

    let status = client
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let peak = peak_in_flight.load(Ordering::SeqCst);
    assert!(
        peak >= 1 && u64::from(peak) <= admits,
        "peak partitions in flight {peak}, budget admits {admits}"
    );
    assert!(status.memory_high_water_bytes <= budget);

    let peak_rss = if reset {
        daemon.proc_status_bytes("VmHWM").max(sampled_rss)
    } else {
        sampled_rss
    };
    eprintln!(
        "completed {completed}, refused {refused}, peak in flight {peak}; RSS baseline {} MiB, peak {} MiB, budget {} MiB",
        baseline >> 20,
        peak_rss >> 20,
        budget >> 20
    );
    assert!(
        peak_rss <= baseline + budget,
        "peak RSS {peak_rss} > baseline {baseline} + budget {budget}"
    );
}

fn vm_rss(path: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
