//! Reaching a spawned `cuzk-daemon` from the test programs (`cuzk-e2e`, `cuzk-balancer`).

use anyhow::{ensure, Context, Result};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

/// A daemon is ready (and serving) within this long, even on a loaded 2-core machine.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A connected channel to the daemon at `addr`.
pub async fn connect(addr: SocketAddr) -> Result<Channel> {
    Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await
        .with_context(|| format!("connecting to the daemon at {addr}"))
}

/// Polls grpc.health.v1 at `addr` until the proving service reports SERVING, failing after
/// [`READY_TIMEOUT`] with the last answer.
pub async fn wait_serving(addr: SocketAddr) -> Result<()> {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let last = match connect(addr).await {
            Ok(channel) => {
                let check = HealthClient::new(channel)
                    .check(HealthCheckRequest {
                        service: cuzk_proto::SERVICE_NAME.into(),
                    })
                    .await;
                match check {
                    Ok(r) if r.get_ref().status() == ServingStatus::Serving => return Ok(()),
                    Ok(r) => format!("{:?}", r.get_ref().status()),
                    Err(e) => format!("{:?} {}", e.code(), e.message()),
                }
            }
            Err(e) => format!("{e:#}"),
        };
        ensure!(
            Instant::now() < deadline,
            "the daemon at {addr} never reported SERVING: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
