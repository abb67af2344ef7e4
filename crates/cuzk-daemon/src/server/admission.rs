//! Request admission: the bytes of gRPC requests are counted against a per-call and a total
//! limit as they arrive, from each message's frame header, before tonic buffers the message.
//!
//! tonic reads a whole message into memory before the service sees it, so without this a few
//! large concurrent requests can take far more memory than the host budget allows. Each
//! message on the wire is a 5-byte header (compressed flag, big-endian length) and its bytes;
//! [`AdmittedBody`] parses every header as it passes and claims `5 + length` from the shared
//! [`RequestBudget`] before the message's bytes are let through. A claim over a limit ends
//! the body with `RESOURCE_EXHAUSTED` naming the limit and its configuration key; the call's
//! claim is released when tonic drops the body (a unary call's message is decoded by then).
//! Since every byte belongs to some parsed frame, a header that understates its message
//! only makes the following bytes count as further frames: the claim still covers all that
//! arrived.

use cuzk_mem::Bytes as Size;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tonic::codegen::http;
use tonic::codegen::Bytes;
use tonic::Status;

/// The gRPC length-prefixed message header: compressed flag and a 4-byte length.
pub const FRAME_HEADER: u64 = 5;

/// The key of the per-call limit, named in its refusals.
pub const PER_CALL_KEY: &str = "server.request_bytes_per_call";

/// The key of the total limit, named in its refusals.
pub const IN_FLIGHT_KEY: &str = "server.request_bytes_in_flight";

/// The key of the decode limit, which bounds the per-call limit.
pub const MESSAGE_KEY: &str = "server.max_message_size";

/// The smallest automatic total: small requests always fit, whatever the host budget.
pub const MIN_AUTO_IN_FLIGHT: u64 = 1 << 20;

/// The limits request bytes are admitted against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes (frame headers included) one call's messages may claim.
    pub per_call: u64,
    /// Most bytes all calls together may claim at once.
    pub in_flight: u64,
    /// The key whose value set `per_call`: [`PER_CALL_KEY`], or the limit that bounded it
    /// ([`MESSAGE_KEY`], [`IN_FLIGHT_KEY`]).
    pub per_call_set_by: &'static str,
}

impl Limits {
    /// The limits for the configured values (`None`: automatic). Automatic: the total is a
    /// quarter of `host_budget` (at least [`MIN_AUTO_IN_FLIGHT`]); per call,
    /// `max_message_size` plus its frame header. A call never gets more than the total, nor
    /// more than the largest message tonic would decode.
    pub fn resolve(
        per_call: Option<u64>,
        in_flight: Option<u64>,
        max_message_size: usize,
        host_budget: u64,
    ) -> Limits {
        let in_flight = in_flight.unwrap_or_else(|| (host_budget / 4).max(MIN_AUTO_IN_FLIGHT));
        let largest = (max_message_size as u64).saturating_add(FRAME_HEADER);
        let (per_call, per_call_set_by) = match per_call {
            Some(n) if n <= largest && n <= in_flight => (n, PER_CALL_KEY),
            _ if largest <= in_flight => (largest, MESSAGE_KEY),
            _ => (in_flight, IN_FLIGHT_KEY),
        };
        Limits {
            per_call,
            in_flight,
            per_call_set_by,
        }
    }
}

/// Why a request's bytes were not admitted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The call's messages claim `claimed` bytes, over the per-call `limit`.
    #[error(
        "request too large for admission: its messages declare {} (frame headers included), over the per-call limit of {} ({PER_CALL_KEY}{})",
        Size(*claimed),
        Size(*limit),
        set_by_hint(set_by)
    )]
    PerCall {
        /// The call's claim had this message been admitted.
        claimed: u64,
        /// The per-call limit.
        limit: u64,
        /// The key that set the limit (see [`Limits::per_call_set_by`]).
        set_by: &'static str,
    },
    /// `needed` more bytes would take the requests in flight past the total `limit`.
    #[error(
        "too many request bytes in flight: this message needs {} while {} of requests are already being received, over the limit of {} ({IN_FLIGHT_KEY}); retry later",
        Size(*needed),
        Size(*in_flight),
        Size(*limit)
    )]
    InFlight {
        /// The bytes this message would claim.
        needed: u64,
        /// The bytes claimed by all calls at the refusal.
        in_flight: u64,
        /// The total limit.
        limit: u64,
    },
}

/// Where an automatic per-call limit came from, for the refusal's message.
fn set_by_hint(set_by: &str) -> String {
    if set_by == PER_CALL_KEY {
        String::new()
    } else {
        format!("; \"auto\", here the value of {set_by}")
    }
}

impl From<Refusal> for Status {
    fn from(refusal: Refusal) -> Status {
        Status::resource_exhausted(refusal.to_string())
    }
}

/// The shared ledger of request bytes being received.
#[derive(Debug)]
pub struct RequestBudget {
    limits: Limits,
    in_flight: AtomicU64,
    high_water: AtomicU64,
    refused: AtomicU64,
}

impl RequestBudget {
    /// An empty ledger over `limits`.
    pub fn new(limits: Limits) -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            limits,
            in_flight: AtomicU64::new(0),
            high_water: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// The limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Bytes claimed by all calls now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The most bytes ever claimed at once.
    pub fn high_water(&self) -> u64 {
        self.high_water.load(Ordering::SeqCst)
    }

    /// Messages refused so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// A new call's claim, empty until its messages' headers arrive.
    pub fn open(self: &Arc<Self>) -> CallClaim {
        CallClaim {
            budget: Arc::clone(self),
            bytes: 0,
        }
    }
}

/// One call's share of the [`RequestBudget`]; released when dropped.
#[derive(Debug)]
pub struct CallClaim {
    budget: Arc<RequestBudget>,
    bytes: u64,
}

impl CallClaim {
    /// Bytes this call holds.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Claims `more` bytes for this call, or refuses them (claiming nothing) when the call
    /// would pass the per-call limit or all calls the total.
    pub fn grow(&mut self, more: u64) -> Result<(), Refusal> {
        let b = &*self.budget;
        let limits = b.limits;
        let claimed = self.bytes.saturating_add(more);
        if claimed > limits.per_call {
            b.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Refusal::PerCall {
                claimed,
                limit: limits.per_call,
                set_by: limits.per_call_set_by,
            });
        }
        let grown = b
            .in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                now.checked_add(more).filter(|&n| n <= limits.in_flight)
            });
        match grown {
            Ok(before) => {
                b.high_water.fetch_max(before + more, Ordering::SeqCst);
                self.bytes = claimed;
                Ok(())
            }
            Err(now) => {
                b.refused.fetch_add(1, Ordering::Relaxed);
                Err(Refusal::InFlight {
                    needed: more,
                    in_flight: now,
                    limit: limits.in_flight,
                })
            }
        }
    }
}

impl Drop for CallClaim {
    fn drop(&mut self) {
        self.budget
            .in_flight
            .fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// Where the parser is in the gRPC message stream.
#[derive(Debug)]
struct Framing {
    header: [u8; FRAME_HEADER as usize],
    /// Header bytes seen of the next message.
    have: usize,
    /// Bytes still to come of the current message.
    payload_left: u64,
}

impl Framing {
    /// Walks `data`, claiming each message whose header completes in it.
    fn count(&mut self, mut data: &[u8], claim: &mut CallClaim) -> Result<(), Refusal> {
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = data
                    .len()
                    .min(usize::try_from(self.payload_left).unwrap_or(usize::MAX));
                self.payload_left -= n as u64;
                data = &data[n..];
                continue;
            }
            let n = data.len().min(self.header.len() - self.have);
            self.header[self.have..self.have + n].copy_from_slice(&data[..n]);
            self.have += n;
            data = &data[n..];
            if self.have == self.header.len() {
                self.have = 0;
                let [_, a, b, c, d] = self.header;
                let length = u64::from(u32::from_be_bytes([a, b, c, d]));
                claim.grow(FRAME_HEADER + length)?;
                self.payload_left = length;
            }
        }
        Ok(())
    }
}

/// A request body whose messages are admitted against a [`RequestBudget`] as they arrive.
#[derive(Debug)]
pub struct AdmittedBody<B> {
    inner: B,
    claim: CallClaim,
    framing: Framing,
    /// The path, for the log of a refusal.
    method: String,
    refused: bool,
}

impl<B> AdmittedBody<B> {
    /// `inner`, counted against `claim`.
    pub fn new(inner: B, claim: CallClaim, method: impl Into<String>) -> AdmittedBody<B> {
        AdmittedBody {
            inner,
            claim,
            framing: Framing {
                header: [0; FRAME_HEADER as usize],
                have: 0,
                payload_left: 0,
            },
            method: method.into(),
            refused: false,
        }
    }
}

impl<B> http_body::Body for AdmittedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Status>>> {
        let this = &mut *self;
        if this.refused {
            return Poll::Ready(None);
        }
        let frame = match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => frame,
            Some(Err(e)) => return Poll::Ready(Some(Err(Status::from_error(e.into())))),
            None => return Poll::Ready(None),
        };
        if let Some(data) = frame.data_ref() {
            if let Err(refusal) = this.framing.count(data, &mut this.claim) {
                this.refused = true;
                tracing::warn!(
                    method = %this.method,
                    reason = %refusal,
                    "request refused before buffering"
                );
                return Poll::Ready(Some(Err(refusal.into())));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.refused || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A service whose request bodies are admitted against a shared [`RequestBudget`]. Placed
/// around a routed gRPC service (it keeps that service's name for the router).
#[derive(Clone, Debug)]
pub struct Admission<S> {
    inner: S,
    budget: Arc<RequestBudget>,
}

impl<S> Admission<S> {
    /// `inner` with its requests admitted against `budget`.
    pub fn new(inner: S, budget: Arc<RequestBudget>) -> Admission<S> {
        Admission { inner, budget }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for Admission<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> tower::Service<http::Request<B>> for Admission<S>
where
    S: tower::Service<http::Request<AdmittedBody<B>>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        let claim = self.budget.open();
        let method = request.uri().path().to_string();
        self.inner
            .call(request.map(|body| AdmittedBody::new(body, claim, method)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn budget(per_call: u64, in_flight: u64) -> Arc<RequestBudget> {
        RequestBudget::new(Limits {
            per_call,
            in_flight,
            per_call_set_by: PER_CALL_KEY,
        })
    }

    #[test]
    fn automatic_limits_follow_the_host_budget_and_message_size() {
        let auto = Limits::resolve(None, None, 256 << 20, 64 * MIB);
        assert_eq!(
            auto,
            Limits {
                per_call: 16 * MIB,
                in_flight: 16 * MIB,
                per_call_set_by: IN_FLIGHT_KEY,
            }
        );
        let big = Limits::resolve(None, None, 256 << 20, 64 << 30);
        assert_eq!(big.in_flight, 16 << 30);
        assert_eq!(big.per_call, (256 << 20) + FRAME_HEADER);
        assert_eq!(big.per_call_set_by, MESSAGE_KEY);
        let tiny = Limits::resolve(None, None, 1 << 20, 1024);
        assert_eq!(tiny.in_flight, MIN_AUTO_IN_FLIGHT);
        // Fixed values are kept, but a call never gets more than the total or tonic's limit.
        let fixed = Limits::resolve(Some(8 * MIB), Some(4 * MIB), 256 << 20, 1 << 40);
        assert_eq!(
            (fixed.per_call, fixed.per_call_set_by),
            (4 * MIB, IN_FLIGHT_KEY)
        );
        let fixed = Limits::resolve(Some(1 << 30), Some(8 << 30), 256 << 20, 1);
        assert_eq!(
            (fixed.per_call, fixed.per_call_set_by),
            ((256 << 20) + FRAME_HEADER, MESSAGE_KEY)
        );
        let fixed = Limits::resolve(Some(64 * MIB), None, 256 << 20, 1 << 40);
        assert_eq!(
            (fixed.per_call, fixed.per_call_set_by),
            (64 * MIB, PER_CALL_KEY)
        );
    }

    #[test]
    fn claims_reserve_release_on_drop_and_refuse_over_a_limit() {
        let b = budget(10, 16);
        let mut first = b.open();
        first.grow(6).unwrap();
        first.grow(4).unwrap();
        assert_eq!((first.bytes(), b.in_flight()), (10, 10));
        // Over the per-call limit: refused, nothing more claimed.
        let e = first.grow(1).unwrap_err();
        assert_eq!(
            e,
            Refusal::PerCall {
                claimed: 11,
                limit: 10,
                set_by: PER_CALL_KEY,
            }
        );
        assert!(e.to_string().ends_with(&format!("({PER_CALL_KEY})")), "{e}");
        assert_eq!(b.in_flight(), 10);
        // Over the total: refused, naming it.
        let mut second = b.open();
        second.grow(6).unwrap();
        let mut third = b.open();
        let e = third.grow(1).unwrap_err();
        assert_eq!(
            e,
            Refusal::InFlight {
                needed: 1,
                in_flight: 16,
                limit: 16
            }
        );
        assert!(e.to_string().contains(IN_FLIGHT_KEY), "{e}");
        assert_eq!(b.refused(), 2);
        drop(first);
        assert_eq!(b.in_flight(), 6);
        third.grow(10).unwrap();
        drop((second, third));
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.high_water(), 16);
        let status = Status::from(e);
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    }

    fn frame(length: u32) -> Vec<u8> {
        let mut f = vec![0];
        f.extend_from_slice(&length.to_be_bytes());
        f
    }

    #[test]
    fn headers_are_claimed_as_they_arrive_even_split_across_chunks() {
        let b = budget(1000, 1000);
        let mut claim = b.open();
        let mut framing = Framing {
            header: [0; 5],
            have: 0,
            payload_left: 0,
        };
        let mut wire = frame(3);
        wire.extend_from_slice(b"abc");
        wire.extend(frame(10));
        wire.extend_from_slice(&[7; 10]);
        // One byte at a time: each header is claimed when its fifth byte arrives.
        for (i, byte) in wire.iter().enumerate() {
            framing
                .count(std::slice::from_ref(byte), &mut claim)
                .unwrap();
            let expected = match i {
                0..=3 => 0,
                4..=11 => 8,
                _ => 23,
            };
            assert_eq!(claim.bytes(), expected, "after byte {i}");
        }
    }

    #[test]
    fn a_header_understating_its_message_cannot_pass() {
        // A header of 1 byte, then a megabyte of zeros: each 5 zeros read as another
        // (empty) message's header, so the claim grows with every byte that arrives.
        let b = budget(64 * 1024, MIB);
        let mut claim = b.open();
        let mut framing = Framing {
            header: [0; 5],
            have: 0,
            payload_left: 0,
        };
        let mut wire = frame(1);
        wire.push(0);
        wire.extend(std::iter::repeat_n(0u8, MIB as usize));
        let e = framing.count(&wire, &mut claim).unwrap_err();
        assert!(matches!(e, Refusal::PerCall { limit, .. } if limit == 64 * 1024));
        assert!(claim.bytes() <= 64 * 1024);
    }

    #[test]
    fn a_declared_length_over_the_limit_is_refused_at_its_header() {
        let b = budget(16 * MIB, 16 * MIB);
        let mut claim = b.open();
        let mut framing = Framing {
            header: [0; 5],
            have: 0,
            payload_left: 0,
        };
        let e = framing.count(&frame(200 << 20), &mut claim).unwrap_err();
        assert_eq!(
            e,
            Refusal::PerCall {
                claimed: (200 << 20) + FRAME_HEADER,
                limit: 16 * MIB,
                set_by: PER_CALL_KEY,
            }
        );
        assert_eq!(b.in_flight(), 0);
    }
}
