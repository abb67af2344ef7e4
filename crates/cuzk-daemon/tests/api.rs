//! The gRPC surface against a spawned daemon: a client built from the generated stubs
//! round-trips proofs; bad requests get the right codes and leave the daemon serving;
//! cancellation, timeouts, idempotency, status, metrics and the bearer token.

mod common;

use common::raw::RawCodec;
use common::{assert_completed, http_get, prove, sha256, synthetic, Launch};
use cuzk_circuits::Sha256Preimage;
use cuzk_daemon::proto::{
    await_proof_response::Status as Outcome, AwaitProofRequest, CancelProofRequest,
    GetMetricsRequest, GetStatusRequest, ProofKind, ProveRequest, SubmitProofRequest,
};
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::Code;

/// Room for a few sample proofs at once, whatever the host has.
const CONFIG: &str = "[memory]\nhost_budget = \"2GiB\"\n";

#[tokio::test]
async fn a_generated_client_round_trips_a_proof() {
    let daemon = Launch::new(CONFIG).start();
    let mut client = daemon.client().await;
    let response = client
        .prove(ProveRequest {
            submit: Some(sha256(b"abc")),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_completed(&response);
    assert!(response.verified);
    assert_eq!(response.partitions, 1);
    let vk = VerifyingKey::read(&response.verifying_key[..]).unwrap();
    let proof = Proof::from_bytes(&response.proof).unwrap();
    let inputs = Sha256Preimage::new(b"abc".to_vec()).public_inputs();
    assert!(verify_proof(&prepare_verifying_key(&vk), &proof, &inputs).unwrap());

    // One idempotency key, one job.
    let keyed = SubmitProofRequest {
        request_id: "sector-7".into(),
        ..synthetic(8, 1, 1)
    };
    let a = client
        .submit_proof(keyed.clone())
        .await
        .unwrap()
        .into_inner();
    let b = client.submit_proof(keyed).await.unwrap().into_inner();
    assert_eq!(a.job_id, b.job_id);

    let status = client
        .get_status(GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.backend, "cpu");
    // The built-in circuits, and the Filecoin kinds when the daemon serves them.
    let mut expected = vec!["sha256", "synthetic-porep"];
    if cfg!(feature = "filecoin") {
        expected.extend([
            "porep-seal-commit",
            "snap-deals-update",
            "window-post-partition",
            "winning-post",
        ]);
        expected.sort_unstable();
    }
    assert_eq!(status.circuits, expected);
    assert!(status
        .loaded_srs
        .iter()
        .any(|s| s.circuit_id.starts_with("sha256")));
}

#[tokio::test]
async fn bad_requests_get_their_codes_and_the_next_job_succeeds() {
    let config = format!("{CONFIG}[server]\nmax_message_size = \"1MiB\"\n");
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;

    // Bytes that are no protobuf message at all.
    let mut raw = tonic::client::Grpc::new(common::channel(daemon.addr).await);
    raw.ready().await.unwrap();
    let garbage = raw
        .unary(
            tonic::Request::new(vec![0xff; 40]),
            PathAndQuery::from_static("/cuzk.v1.ProvingEngine/SubmitProof"),
            RawCodec,
        )
        .await
        .unwrap_err();
    assert_eq!(garbage.code(), Code::InvalidArgument, "{garbage:?}");

    let code_of = |r: Result<tonic::Response<_>, tonic::Status>| r.map(drop).unwrap_err();
    let unknown = code_of(
        client
            .submit_proof(SubmitProofRequest {
                circuit: "no-such-circuit".into(),
                ..SubmitProofRequest::default()
            })
            .await,
    );
    assert_eq!(unknown.code(), Code::InvalidArgument);
    assert!(unknown.message().contains("no-such-circuit"), "{unknown:?}");

    let porep = code_of(
        client
            .submit_proof(SubmitProofRequest {
                proof_kind: ProofKind::PorepSealCommit.into(),
                vanilla_proof: b"{}".to_vec(),
                ..SubmitProofRequest::default()
            })
            .await,
    );
    if cfg!(feature = "filecoin") {
        // Served, and "{}" is no C1 output.
        assert_eq!(porep.code(), Code::InvalidArgument);
        assert!(porep.message().contains("C1 output JSON"), "{porep:?}");
    } else {
        assert_eq!(porep.code(), Code::Unimplemented);
        assert!(porep.message().contains("POREP_SEAL_COMMIT"), "{porep:?}");
    }

    // Wrong inputs: a missing field, an extra one, bytes where none are taken.
    let mut missing = synthetic(8, 0, 1);
    missing.circuit_fields.remove("log2_constraints");
    let mut extra = synthetic(8, 0, 1);
    extra.circuit_fields.insert("bogus".into(), 1);
    let mut with_bytes = synthetic(8, 0, 1);
    with_bytes.circuit_inputs = vec![0xde, 0xad];
    for (what, bad) in [
        ("missing", missing),
        ("extra", extra),
        ("bytes", with_bytes),
    ] {
        let status = code_of(client.submit_proof(bad).await);
        assert_eq!(status.code(), Code::InvalidArgument, "{what}: {status:?}");
    }

    // Over the message limit, and over the memory budget.
    let oversized = code_of(client.submit_proof(sha256(&vec![7; 2 << 20])).await);
    assert_eq!(oversized.code(), Code::ResourceExhausted, "{oversized:?}");
    assert!(oversized.message().contains("too large"), "{oversized:?}");
    let huge = code_of(client.submit_proof(synthetic(27, 0, 1)).await);
    assert_eq!(huge.code(), Code::ResourceExhausted, "{huge:?}");
    assert!(huge.message().contains("budget"), "{huge:?}");

    let missing_submit = client
        .prove(ProveRequest { submit: None })
        .await
        .unwrap_err();
    assert_eq!(missing_submit.code(), Code::InvalidArgument);

    // The daemon is unaffected.
    assert_completed(&prove(&mut client, synthetic(10, 3, 2)).await);
    let metrics = client
        .get_metrics(GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(metrics
        .prometheus_text
        .contains("cuzk_grpc_requests_total{method=\"SubmitProof\",code=\"INVALID_ARGUMENT\"}"));
}

#[tokio::test]
async fn cancelled_and_timed_out_jobs_report_so() {
    // No retry grace: a Prove job nobody waits on stops at once.
    let config = format!("{CONFIG}[scheduler]\nretry_grace_secs = 0\n");
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;
    // One lane: the first job runs while the second waits behind it.
    let running = client
        .submit_proof(synthetic(14, 1, 4))
        .await
        .unwrap()
        .into_inner();
    let queued = client
        .submit_proof(synthetic(14, 2, 4))
        .await
        .unwrap()
        .into_inner();

    let wait = |job_id: &str, timeout_ms| AwaitProofRequest {
        job_id: job_id.to_string(),
        timeout_ms,
    };
    let early = client
        .await_proof(wait(&queued.job_id, 1))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(early.status(), Outcome::Timeout);

    let cancel = |job_id: &str| CancelProofRequest {
        job_id: job_id.to_string(),
    };
    let c = client
        .cancel_proof(cancel(&queued.job_id))
        .await
        .unwrap()
        .into_inner();
    assert!(!c.was_running);
    let r = client
        .await_proof(wait(&queued.job_id, 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status(), Outcome::Cancelled);
    assert!(r.error_message.contains("cancelled"), "{}", r.error_message);

    // Wait until the first job has started, then cancel it.
    common::until_running(&mut client).await;
    let c = client
        .cancel_proof(cancel(&running.job_id))
        .await
        .unwrap()
        .into_inner();
    assert!(c.was_running);
    let r = client
        .await_proof(wait(&running.job_id, 0))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status(), Outcome::Cancelled);

    // A job this start never issued, and one of another start: NOT_FOUND.
    let (start, _) = running.job_id.rsplit_once('-').unwrap();
    for id in [format!("{start}-999999"), "0123456789abcdef-0".to_string()] {
        let unknown = client.cancel_proof(cancel(&id)).await.unwrap_err();
        assert_eq!(unknown.code(), Code::NotFound, "{id}");
        let unknown = client.await_proof(wait(&id, 0)).await.unwrap_err();
        assert_eq!(unknown.code(), Code::NotFound, "{id}");
    }
    for id in ["not-a-job", "17"] {
        let bad = client.await_proof(wait(id, 0)).await.unwrap_err();
        assert_eq!(bad.code(), Code::InvalidArgument, "{id}");
    }

    // A Prove caller that goes away takes its job with it.
    let gone = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        client.prove(ProveRequest {
            submit: Some(synthetic(14, 9, 4)),
        }),
    )
    .await;
    assert!(
        gone.is_err(),
        "the proof should outlast the caller's patience"
    );
    let mut cancelled = false;
    for _ in 0..500 {
        let text = client
            .get_metrics(GetMetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .prometheus_text;
        if text.contains("cuzk_jobs_total{outcome=\"cancelled\"} 3") {
            cancelled = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(cancelled, "the abandoned Prove job was not cancelled");

    assert_completed(&prove(&mut client, synthetic(8, 5, 1)).await);
}

#[tokio::test]
async fn a_token_guards_proving_and_metrics_but_not_health() {
    let config = format!("{CONFIG}[server]\nauth_token = \"s3cret\"\n");
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;
    let denied = client.get_status(GetStatusRequest {}).await.unwrap_err();
    assert_eq!(denied.code(), Code::Unauthenticated);

    let mut request = tonic::Request::new(GetStatusRequest {});
    request
        .metadata_mut()
        .insert("authorization", "Bearer s3cret".parse().unwrap());
    client.get_status(request).await.unwrap();

    use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
    let mut health = HealthClient::new(common::channel(daemon.addr).await);
    let serving = health
        .check(HealthCheckRequest {
            service: cuzk_daemon::proto::SERVICE_NAME.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(serving.status, 1, "SERVING");

    let metrics = daemon.metrics.unwrap();
    assert!(http_get(metrics, "/metrics", None).0.contains("401"));
    let (status, body) = http_get(metrics, "/metrics", Some("s3cret"));
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("cuzk_jobs_total{outcome=\"submitted\"} 0"));
    assert!(http_get(metrics, "/healthz", None).0.contains("200"));
}
