//! Connecting to a daemon: its address, the optional bearer token, message limits.

use anyhow::{Context, Result};
use cuzk_proto::proving_engine_client::ProvingEngineClient;
use std::time::Duration;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::service::Interceptor;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status};

/// Messages as large as the daemon's default limit: a C1 output is tens of megabytes.
const MAX_MESSAGE: usize = 128 << 20;

/// A proving-service client that adds the token to every call.
pub type Client = ProvingEngineClient<InterceptedService<Channel, Token>>;

/// Where the daemon is and how to authenticate.
#[derive(Debug, Clone)]
pub struct Target {
    /// `http://host:port`.
    pub uri: String,
    /// Bearer token, if the daemon requires one.
    pub token: Option<String>,
}

impl Target {
    /// `addr` as given (`host:port` or a URI), with an optional token.
    pub fn new(addr: &str, token: Option<String>) -> Target {
        let uri = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}")
        };
        Target { uri, token }
    }

    /// A channel to the daemon, failing after `timeout` if it cannot connect.
    pub async fn channel(&self, timeout: Duration) -> Result<Channel> {
        Endpoint::from_shared(self.uri.clone())
            .with_context(|| format!("{} is not a valid address", self.uri))?
            .connect_timeout(timeout)
            .connect()
            .await
            .with_context(|| format!("cannot connect to the daemon at {}", self.uri))
    }

    /// A proving client.
    pub async fn client(&self) -> Result<Client> {
        let channel = self.channel(Duration::from_secs(10)).await?;
        let token = Token::new(self.token.as_deref())?;
        Ok(ProvingEngineClient::with_interceptor(channel, token)
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE))
    }
}

/// Adds `authorization: Bearer <token>` when a token is set.
#[derive(Debug, Clone)]
pub struct Token(Option<MetadataValue<tonic::metadata::Ascii>>);

impl Token {
    fn new(token: Option<&str>) -> Result<Token> {
        let value = token
            .map(|t| format!("Bearer {t}").parse())
            .transpose()
            .context("the token must be visible ASCII")?;
        Ok(Token(value))
    }
}

impl Interceptor for Token {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Reads `30`, `30s`, `500ms`, `2m` as a duration (plain numbers are seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1e3,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown unit {other:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_addresses_read_as_written() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("soon").is_err());
        assert_eq!(
            Target::new("127.0.0.1:9820", None).uri,
            "http://127.0.0.1:9820"
        );
        assert_eq!(Target::new("https://x:1", None).uri, "https://x:1");
    }
}
