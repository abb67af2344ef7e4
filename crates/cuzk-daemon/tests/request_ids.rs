//! The request-id rules of docs/operations.md against a spawned CPU daemon, one test per
//! rule, with request ids as Curio writes them (fixed per sector, spaces and brackets in
//! WindowPoSt's); job ids across a restart; the queue counts Curio's capacity check adds.

mod common;

use common::{assert_completed, synthetic, until_running, Launch, TestDaemon};
use cuzk_daemon::proto::proving_engine_client::ProvingEngineClient;
use cuzk_daemon::proto::{
    await_proof_response::Status as Outcome, AwaitProofRequest, AwaitProofResponse,
    CancelProofRequest, GetMetricsRequest, GetStatusRequest, ProveRequest, SubmitProofRequest,
};
use nix::sys::signal::Signal;
use std::time::Duration;
use tonic::transport::Channel;
use tonic::Code;

type Client = ProvingEngineClient<Channel>;

/// One lane, room for a few sample proofs, and a retry grace period of `grace` seconds.
fn daemon(grace: u64) -> TestDaemon {
    let config =
        format!("[memory]\nhost_budget = \"2GiB\"\n[scheduler]\nretry_grace_secs = {grace}\n");
    Launch::new(&config).start()
}

/// A synthetic request that takes a few seconds on the CPU, under `id`.
fn slow(id: &str, seed: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: id.to_string(),
        ..synthetic(14, seed, 4)
    }
}

async fn prove(client: &mut Client, submit: SubmitProofRequest) -> AwaitProofResponse {
    client
        .prove(ProveRequest {
            submit: Some(submit),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap()
}

async fn submit(client: &mut Client, submit: SubmitProofRequest) -> String {
    client
        .submit_proof(submit)
        .await
        .unwrap()
        .into_inner()
        .job_id
}

async fn wait(client: &mut Client, job_id: &str) -> AwaitProofResponse {
    client
        .await_proof(AwaitProofRequest {
            job_id: job_id.to_string(),
            timeout_ms: 0,
        })
        .await
        .unwrap()
        .into_inner()
}

/// The daemon's count of jobs that ended `outcome`, from its metrics.
async fn jobs_total(client: &mut Client, outcome: &str) -> u64 {
    let text = client
        .get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    let key = format!("cuzk_jobs_total{{outcome=\"{outcome}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .map_or(0, |v| v.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_request_attaches_and_a_leaving_caller_cancels_nothing() {
    let d = daemon(0);
    let mut a = d.client().await;
    let mut b = d.client().await;
    let id = "wdpost-1000-0-[1 2 3 4 5 6 7 8]";
    let first = tokio::spawn({
        let mut a = a.clone();
        async move { prove(&mut a, slow(id, 1)).await }
    });
    until_running(&mut b).await;
    // A second caller with the same id and request attaches, then goes away.
    let gone = tokio::time::timeout(Duration::from_millis(300), prove(&mut b, slow(id, 1))).await;
    assert!(gone.is_err(), "the proof should outlast the second caller");
    // A SubmitProof of the same request answers with the same job.
    let again = submit(&mut a, slow(id, 1)).await;
    let first = first.await.unwrap();
    assert_completed(&first);
    assert_eq!(first.job_id, again);
    assert_eq!(jobs_total(&mut a, "cancelled").await, 0);
    assert_eq!(
        jobs_total(&mut a, "succeeded").await,
        1,
        "one job for three calls"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_request_sent_at_once_makes_one_job() {
    let d = daemon(0);
    let client = d.client().await;
    let id = "porep-1000-7";
    // Parsed concurrently, outside the job table's lock: the first recorded has the job.
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let mut c = client.clone();
            tokio::spawn(async move { submit(&mut c, slow(id, 3)).await })
        })
        .collect();
    let mut ids = Vec::new();
    for c in calls {
        ids.push(c.await.unwrap());
    }
    ids.dedup();
    assert_eq!(
        ids.len(),
        1,
        "one job for eight identical submissions: {ids:?}"
    );
    let mut c = client.clone();
    assert_completed(&wait(&mut c, &ids[0]).await);
    assert_eq!(jobs_total(&mut c, "succeeded").await, 1);
    assert_eq!(jobs_total(&mut c, "cancelled").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_within_the_grace_period_reattaches() {
    let d = daemon(120);
    let mut client = d.client().await;
    let id = "porep-1000-7";
    // Curio's ProveTimeout: the caller gives up while the job runs.
    let gone = tokio::time::timeout(Duration::from_millis(300), prove(&mut client, slow(id, 2)));
    assert!(gone.await.is_err());
    // Its retry re-attaches to the job still running, and gets its proof.
    let retry = prove(&mut client, slow(id, 2)).await;
    assert_completed(&retry);
    assert_eq!(jobs_total(&mut client, "cancelled").await, 0);
    assert_eq!(jobs_total(&mut client, "succeeded").await, 1);
    // After success the same request gets the stored proof at once.
    let stored = prove(&mut client, slow(id, 2)).await;
    assert_completed(&stored);
    assert_eq!(stored.job_id, retry.job_id);
    assert_eq!(stored.proof, retry.proof);
    // The same id for another request (a re-sealed sector): a new job, never the old proof.
    let resealed = prove(&mut client, slow(id, 3)).await;
    assert_completed(&resealed);
    assert_ne!(resealed.job_id, retry.job_id);
    assert_ne!(resealed.proof, retry.proof);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_waiter_past_the_grace_period_the_prove_job_stops() {
    let d = daemon(1);
    let mut client = d.client().await;
    let gone = tokio::time::timeout(
        Duration::from_millis(200),
        prove(&mut client, slow("porep-1000-8", 4)),
    );
    assert!(gone.await.is_err());
    let mut cancelled = false;
    for _ in 0..600 {
        if jobs_total(&mut client, "cancelled").await == 1 {
            cancelled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(cancelled, "the abandoned Prove job was not cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_cancellation_or_a_failure_the_id_gets_a_new_job() {
    let d = daemon(120);
    let mut client = d.client().await;
    let id = "snap-1000-9";
    let old = submit(&mut client, slow(id, 5)).await;
    client
        .cancel_proof(CancelProofRequest {
            job_id: old.clone(),
        })
        .await
        .unwrap();
    assert_eq!(wait(&mut client, &old).await.status(), Outcome::Cancelled);
    let new = submit(&mut client, slow(id, 5)).await;
    assert_ne!(
        new, old,
        "a retry after a cancellation got the cancelled job"
    );
    assert_completed(&wait(&mut client, &new).await);

    // A deadline too short for the job: FAILED; the same request again is a new job.
    let tight = SubmitProofRequest {
        deadline_ms: 1,
        ..slow("porep-1000-10", 6)
    };
    let failed = prove(&mut client, tight.clone()).await;
    assert_eq!(failed.status(), Outcome::Failed, "{}", failed.error_message);
    let again = prove(&mut client, tight).await;
    assert_eq!(again.status(), Outcome::Failed);
    assert_ne!(again.job_id, failed.job_id);
}

#[tokio::test(flavor = "multi_thread")]
async fn job_ids_do_not_survive_a_restart_and_queues_add_up() {
    let mut first = daemon(0);
    let mut client = first.client().await;
    let done = prove(&mut client, synthetic(8, 1, 1)).await;
    assert_completed(&done);
    // Curio's capacity check: pending + in_progress over every queue.
    let ids = [
        submit(&mut client, slow("", 11)).await,
        submit(&mut client, slow("", 12)).await,
        submit(&mut client, slow("", 13)).await,
    ];
    let status = client
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let in_flight: u32 = status
        .queues
        .iter()
        .map(|q| q.pending + q.in_progress)
        .sum();
    assert_eq!(in_flight, 3, "{:?}", status.queues);
    assert!(status
        .queues
        .iter()
        .all(|q| q.proof_kind == "synthetic-porep"));
    for id in &ids {
        client
            .cancel_proof(CancelProofRequest { job_id: id.clone() })
            .await
            .unwrap();
    }
    first.signal(Signal::SIGTERM);
    first.wait_exit(Duration::from_secs(60));

    // Another start proves a job of its own; the old id names nothing there.
    let second = daemon(0);
    let mut client = second.client().await;
    let other = prove(&mut client, synthetic(8, 2, 1)).await;
    assert_completed(&other);
    for old in [&done.job_id, &ids[0]] {
        let status = client
            .await_proof(AwaitProofRequest {
                job_id: old.clone(),
                timeout_ms: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), Code::NotFound, "{status:?}");
    }
    let status = client
        .cancel_proof(CancelProofRequest {
            job_id: done.job_id.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
}
