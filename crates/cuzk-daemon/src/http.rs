//! A minimal HTTP/1.1 responder for Prometheus: `GET /metrics` (the same text as
//! GetMetrics) and `GET /healthz`. One request per connection; nothing else is served, so
//! a full HTTP stack is not worth its weight here.

use crate::auth::BearerAuth;
use crate::engine::Engine;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Largest request head read; a scrape's is a few hundred bytes.
const MAX_HEAD: usize = 16 << 10;

/// A client gets this long to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    auth: BearerAuth,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            // The watch guard is not Send; only the fact that stop came matters.
            _ = async { stop.wait_for(|s| *s).await.map(drop) } => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (engine, auth) = (Arc::clone(&engine), auth.clone());
                    tokio::spawn(async move {
                        if let Err(e) = respond(stream, &engine, &auth).await {
                            tracing::debug!(error = %e, "metrics connection");
                        }
                    });
                }
                // Out of descriptors and the like: back off rather than spin.
                Err(e) => {
                    tracing::warn!(error = %e, "metrics listener cannot accept");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

async fn respond(mut stream: TcpStream, engine: &Engine, auth: &BearerAuth) -> std::io::Result<()> {
    let head = match tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream)).await {
        Ok(head) => head?,
        Err(_) => return Ok(()),
    };
    let (status, body) = route(&head, engine, auth);
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

/// Reads up to the blank line ending the request head.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// The status line and body for a request head.
fn route(head: &str, engine: &Engine, auth: &BearerAuth) -> (&'static str, String) {
    let mut lines = head.lines();
    let mut first = lines.next().unwrap_or("").split_whitespace();
    let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let header = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("authorization"))
        .map(|(_, value)| value.trim().as_bytes());
    match (method, path) {
        ("GET", "/healthz") if engine.is_draining() => {
            ("503 Service Unavailable", "shutting down\n".into())
        }
        ("GET", "/healthz") => ("200 OK", "ok\n".into()),
        ("GET", "/metrics") if !auth.allows(header) => (
            "401 Unauthorized",
            "authorization: Bearer <token> required\n".into(),
        ),
        ("GET", "/metrics") => ("200 OK", engine.metrics_text()),
        ("GET", _) => ("404 Not Found", "not found: try /metrics\n".into()),
        _ => ("405 Method Not Allowed", "only GET is served\n".into()),
    }
}
