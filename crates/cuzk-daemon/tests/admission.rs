//! Request admission, against the daemon as a process under a 64 MiB host budget: large
//! requests are refused from their message header, before tonic buffers them (read from
//! the daemon's RSS in /proc); a request still arriving holds its bytes against the total
//! until it ends; a header that understates its message cannot slip bytes past the limit.
//! The ledger itself is unit-tested beside it (src/server/admission.rs).

mod common;

use common::{assert_completed, channel, prove, sha256, Launch, TestDaemon};
use prost::Message;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tonic::codegen::http;
use tonic::codegen::Bytes;
use tonic::{Code, Status};

const MIB: u64 = 1 << 20;
const HOST_BUDGET: &str = "[memory]\nhost_budget = \"64MiB\"\n";
const CALLS: usize = 8;
const BODY: usize = 200 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_200_mib_submissions_are_refused_before_they_are_buffered() {
    let daemon = Launch::new(HOST_BUDGET).start();
    // Automatic limits under 64 MiB: a quarter of the budget in all, as much per call.
    let log = daemon.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("request admission"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        line.contains("per_call=16.00 MiB") && line.contains("in_flight=16.00 MiB"),
        "{line}"
    );
    let mut client = daemon.client().await;
    // Warm: a circuit set up and a proof made, so that what follows measures only requests.
    assert_completed(&prove(&mut client, sha256(b"before")).await);
    let before = daemon.proc_status_bytes("VmRSS");
    // Resets the kernel's peak-RSS mark (VmHWM) to the current RSS.
    let reset = std::fs::write(format!("/proc/{}/clear_refs", daemon.pid), "5").is_ok();

    let large = sha256(&vec![0x5a; BODY]);
    let mut calls = Vec::new();
    for _ in 0..CALLS {
        let (mut client, request) = (client.clone(), large.clone());
        calls.push(tokio::spawn(
            async move { client.submit_proof(request).await },
        ));
    }
    for call in calls {
        let status = call
            .await
            .unwrap()
            .expect_err("a 200 MiB request is admitted");
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let m = status.message();
        assert!(
            m.contains("per-call limit of 16.00 MiB (server.request_bytes_per_call")
                && m.contains("here the value of server.request_bytes_in_flight"),
            "{m}"
        );
    }
    let after = daemon.proc_status_bytes("VmRSS");
    let peak = if reset {
        daemon.proc_status_bytes("VmHWM")
    } else {
        after
    };
    eprintln!(
        "RSS before {} MiB, after {} MiB, peak {} MiB (peak reset: {reset})",
        before / MIB,
        after / MIB,
        peak / MIB
    );
    assert!(after <= before + 64 * MIB, "RSS {before} -> {after}");
    assert!(
        peak <= before + 64 * MIB,
        "peak RSS {peak}, before {before}"
    );
    assert!(daemon
        .log_text()
        .contains("request refused before buffering"));

    // Nothing is left claimed: a normal proof is served as before.
    assert_completed(&prove(&mut client, sha256(b"after")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_still_arriving_holds_its_bytes_against_the_total_until_it_ends() {
    let config = format!("{HOST_BUDGET}[server]\nrequest_bytes_in_flight = \"8MiB\"\n");
    let daemon = Launch::new(&config).start();
    let mut client = daemon.client().await;

    // A 6 MiB message whose first kilobyte arrives and whose rest never comes.
    let (held, body) = ChannelBody::new();
    held.send(header(6 << 20)).await.unwrap();
    held.send(Bytes::from(vec![0; 1024])).await.unwrap();
    let stalled = tokio::spawn(raw_call(daemon.addr, body));

    // A second 6 MiB message would take the total past 8 MiB. Until the first one's header
    // has been read, the second may still get through (then the circuit refuses it).
    let six = sha256(&vec![1; 6 << 20]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let refused = loop {
        let status = client.submit_proof(six.clone()).await.unwrap_err();
        if status.code() == Code::ResourceExhausted {
            break status;
        }
        assert!(Instant::now() < deadline, "never refused: {status:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let m = refused.message();
    assert!(
        m.contains("server.request_bytes_in_flight") && m.contains("limit of 8.00 MiB"),
        "{m}"
    );
    assert!(!stalled.is_finished());

    // The first request ends short: it fails, and its claim is released.
    drop(held);
    let first = stalled.await.unwrap();
    assert_ne!(first.code(), Code::Ok, "{first:?}");
    assert_ne!(first.code(), Code::ResourceExhausted, "{first:?}");
    let status = client.submit_proof(six).await.unwrap_err();
    assert_ne!(
        status.code(),
        Code::ResourceExhausted,
        "still refused after the first request ended: {status:?}"
    );
    assert_completed(&prove(&mut client, sha256(b"small")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_that_understates_its_message_cannot_pass_the_limit() {
    let daemon: TestDaemon = Launch::new(HOST_BUDGET).start();
    // A valid small message, then 32 MiB of zeros: the zeros parse as empty messages'
    // headers (tonic would decode them all), and every one of them is counted.
    let mut wire = header(0).to_vec();
    let message = sha256(b"small").encode_to_vec();
    wire[1..].copy_from_slice(&(message.len() as u32).to_be_bytes());
    wire.extend(message);
    let (tx, body) = ChannelBody::new();
    let feeder = tokio::spawn(async move {
        if tx.send(Bytes::from(wire)).await.is_err() {
            return 0;
        }
        let zeros = Bytes::from(vec![0; MIB as usize]);
        let mut sent = 0;
        while sent < 32 && tx.send(zeros.clone()).await.is_ok() {
            sent += 1;
        }
        sent
    });
    let status = raw_call(daemon.addr, body).await;
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("server.request_bytes_per_call"),
        "{status:?}"
    );
    let sent = feeder.await.unwrap();
    eprintln!("refused after {sent} MiB of zeros were handed to the connection");
    let mut client = daemon.client().await;
    assert_completed(&prove(&mut client, sha256(b"after")).await);
}

/// A gRPC frame header declaring `length` bytes.
fn header(length: u32) -> Bytes {
    let mut h = vec![0];
    h.extend_from_slice(&length.to_be_bytes());
    Bytes::from(h)
}

/// Calls SubmitProof with `body` as the raw request body; the call's status.
async fn raw_call(addr: SocketAddr, body: ChannelBody) -> Status {
    use tower::ServiceExt;
    let request = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/cuzk.v1.ProvingEngine/SubmitProof"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::new(body))
        .unwrap();
    let response = match channel(addr).await.oneshot(request).await {
        Ok(r) => r,
        Err(e) => return Status::from_error(e.into()),
    };
    if let Some(status) = Status::from_header_map(response.headers()) {
        return status;
    }
    let mut body = response.into_body();
    loop {
        let frame = std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx));
        match frame.await {
            Some(Ok(frame)) => {
                if let Some(trailers) = frame.trailers_ref() {
                    return Status::from_header_map(trailers)
                        .unwrap_or_else(|| Status::unknown("no grpc-status in the trailers"));
                }
            }
            Some(Err(e)) => return e,
            None => return Status::unknown("the response ended without a status"),
        }
    }
}

/// A request body fed from a channel: ends when the sender is dropped.
#[derive(Debug)]
struct ChannelBody(mpsc::Receiver<Bytes>);

impl ChannelBody {
    fn new() -> (mpsc::Sender<Bytes>, ChannelBody) {
        let (tx, rx) = mpsc::channel(4);
        (tx, ChannelBody(rx))
    }
}

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(http_body::Frame::data(c))))
    }
}
