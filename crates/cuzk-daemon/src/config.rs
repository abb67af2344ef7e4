//! The daemon's TOML configuration: the embedded default, files layered on top, and
//! validation into the settings the daemon runs with.

use crate::error::ConfigError;
use cuzk_mem::{parse_size, HostBudget};
use cuzk_sched::SchedulerConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The configuration compiled into the binary (src/default.toml).
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// The configuration as written. Every section and key is optional in a file: what a file
/// leaves out keeps its default.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Listening, limits, authentication, shutdown.
    pub server: ServerSection,
    /// The prover backend.
    pub prover: ProverSection,
    /// The host memory budget.
    pub memory: MemorySection,
    /// Scheduler limits.
    pub scheduler: SchedulerSection,
    /// Logging.
    pub log: LogSection,
    /// Circuits set up before the daemon reports ready.
    pub preload: Vec<Preload>,
}

/// `[server]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSection {
    /// gRPC address, `IP:port`.
    pub listen: String,
    /// Prometheus address, `IP:port`, or empty for none.
    pub metrics_listen: String,
    /// Largest message, a size such as `128MiB`.
    pub max_message_size: String,
    /// Bearer token, or empty.
    pub auth_token: String,
    /// File holding the bearer token, or empty.
    pub auth_token_file: String,
    /// Allow a non-loopback bind without a token.
    pub allow_remote_without_token: bool,
    /// Seconds accepted jobs may run on after SIGTERM/SIGINT.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: "127.0.0.1:9820".into(),
            metrics_listen: "127.0.0.1:9821".into(),
            max_message_size: "128MiB".into(),
            auth_token: String::new(),
            auth_token_file: String::new(),
            allow_remote_without_token: false,
            shutdown_grace_secs: 30,
        }
    }
}

/// `[prover]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ProverSection {
    /// `auto` or `cpu`.
    pub backend: String,
    /// Lanes per device.
    pub workers_per_device: usize,
    /// Self-verification.
    pub verify_proofs: bool,
}

impl Default for ProverSection {
    fn default() -> Self {
        ProverSection {
            backend: "auto".into(),
            workers_per_device: 1,
            verify_proofs: true,
        }
    }
}

/// `[memory]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct MemorySection {
    /// `auto` or a size.
    pub host_budget: String,
    /// `auto` or a size.
    pub host_margin: String,
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            host_budget: "auto".into(),
            host_margin: "auto".into(),
        }
    }
}

/// `[scheduler]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerSection {
    /// Synthesis threads, 0 for automatic.
    pub synthesis_workers: usize,
    /// Lookahead, 0 for automatic.
    pub lookahead: usize,
    /// Most unfinished jobs.
    pub max_queued_jobs: usize,
    /// Finished jobs remembered.
    pub finished_history: usize,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        SchedulerSection {
            synthesis_workers: 0,
            lookahead: 0,
            max_queued_jobs: 1024,
            finished_history: 1024,
        }
    }
}

/// `[log]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LogSection {
    /// A tracing filter.
    pub filter: String,
}

impl Default for LogSection {
    fn default() -> Self {
        LogSection {
            filter: "info".into(),
        }
    }
}

/// One `[[preload]]` entry: a circuit and the inputs that fix its shape.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Preload {
    /// The registered circuit's name.
    pub circuit: String,
    /// Its named integer inputs.
    #[serde(default)]
    pub fields: BTreeMap<String, u64>,
    /// Its input bytes, in hex.
    #[serde(default)]
    pub input_hex: String,
}

/// Which prover backend to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// Every GPU, or the CPU when there is none.
    Auto,
    /// The CPU backend.
    Cpu,
}

/// The configuration, checked and resolved into what the daemon uses.
#[derive(Clone, Debug)]
pub struct Settings {
    /// gRPC address.
    pub listen: SocketAddr,
    /// Prometheus address, if any.
    pub metrics_listen: Option<SocketAddr>,
    /// Largest message in bytes.
    pub max_message_size: usize,
    /// Bearer token, if any.
    pub auth_token: Option<String>,
    /// Grace period on shutdown.
    pub shutdown_grace: Duration,
    /// Backend.
    pub backend: BackendChoice,
    /// Lanes per device.
    pub workers_per_device: usize,
    /// Host budget policy.
    pub host_budget: HostBudget,
    /// Scheduler knobs.
    pub scheduler: SchedulerConfig,
    /// Log filter.
    pub log_filter: String,
    /// Circuits to set up before ready.
    pub preload: Vec<Preload>,
}

impl Config {
    /// The embedded default configuration.
    pub fn embedded() -> Config {
        toml::from_str(DEFAULT_CONFIG).expect("the embedded configuration parses")
    }

    /// The embedded default with `path`'s keys on top.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parses configuration text; keys it omits keep their defaults. `origin` names it in
    /// errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|source| ConfigError::Parse {
            path: origin.to_path_buf(),
            source: Box::new(source),
        })
    }

    /// Checks every value and resolves sizes, addresses and the token.
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        let s = &self.server;
        let listen = address("server.listen", &s.listen)?;
        let metrics_listen = match s.metrics_listen.trim() {
            "" => None,
            text => Some(address("server.metrics_listen", text)?),
        };
        let max_message_size = size("server.max_message_size", &s.max_message_size)?;
        if max_message_size < 1 << 20 {
            return Err(invalid(
                "server.max_message_size",
                &s.max_message_size,
                "must be at least 1MiB",
            ));
        }
        let max_message_size = usize::try_from(max_message_size).map_err(|_| {
            invalid(
                "server.max_message_size",
                &s.max_message_size,
                "too large for this platform",
            )
        })?;
        let auth_token = token(s)?;
        for (key, addr) in [
            ("server.listen", Some(listen)),
            ("server.metrics_listen", metrics_listen),
        ] {
            if let Some(addr) = addr {
                if !addr.ip().is_loopback() && auth_token.is_none() && !s.allow_remote_without_token
                {
                    return Err(invalid(
                        key,
                        &addr.to_string(),
                        "is not a loopback address: set server.auth_token (or auth_token_file), \
                         or allow_remote_without_token = true behind a trusted network boundary",
                    ));
                }
            }
        }
        let backend = match self.prover.backend.as_str() {
            "auto" => BackendChoice::Auto,
            "cpu" => BackendChoice::Cpu,
            other => {
                return Err(invalid(
                    "prover.backend",
                    other,
                    "must be \"auto\" or \"cpu\"",
                ))
            }
        };
        if self.prover.workers_per_device == 0 {
            return Err(invalid(
                "prover.workers_per_device",
                "0",
                "must be at least 1",
            ));
        }
        let m = &self.memory;
        let host_budget = match (m.host_budget.trim(), m.host_margin.trim()) {
            ("auto", "auto") => HostBudget::Auto,
            ("auto", margin) => HostBudget::AutoWithMargin(size("memory.host_margin", margin)?),
            (fixed, _) => HostBudget::Fixed(size("memory.host_budget", fixed)?),
        };
        let q = &self.scheduler;
        if q.max_queued_jobs == 0 {
            return Err(invalid(
                "scheduler.max_queued_jobs",
                "0",
                "must be at least 1",
            ));
        }
        let nonzero = |n: usize| (n > 0).then_some(n);
        let scheduler = SchedulerConfig {
            synthesis_workers: nonzero(q.synthesis_workers),
            lookahead: nonzero(q.lookahead),
            max_queued_jobs: q.max_queued_jobs,
            verify_proofs: self.prover.verify_proofs,
            finished_history: q.finished_history,
        };
        for p in &self.preload {
            hex(&p.input_hex)
                .map_err(|reason| invalid("preload.input_hex", &p.input_hex, reason))?;
        }
        Ok(Settings {
            listen,
            metrics_listen,
            max_message_size,
            auth_token,
            shutdown_grace: Duration::from_secs(s.shutdown_grace_secs),
            backend,
            workers_per_device: self.prover.workers_per_device,
            host_budget,
            scheduler,
            log_filter: self.log.filter.clone(),
            preload: self.preload.clone(),
        })
    }
}

fn invalid(key: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn address(key: &'static str, text: &str) -> Result<SocketAddr, ConfigError> {
    text.trim()
        .parse()
        .map_err(|_| invalid(key, text, "is not an IP:port address (e.g. 127.0.0.1:9820)"))
}

fn size(key: &'static str, text: &str) -> Result<u64, ConfigError> {
    parse_size(text).map_err(|e| invalid(key, text, e.to_string()))
}

/// The token from `auth_token` or the first line of `auth_token_file`.
fn token(s: &ServerSection) -> Result<Option<String>, ConfigError> {
    let inline = s.auth_token.trim();
    let file = s.auth_token_file.trim();
    let token = match (inline.is_empty(), file.is_empty()) {
        (true, true) => return Ok(None),
        (false, false) => {
            return Err(invalid(
                "server.auth_token_file",
                file,
                "set either auth_token or auth_token_file, not both",
            ))
        }
        (false, true) => inline.to_string(),
        (true, false) => {
            let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
                path: PathBuf::from(file),
                source,
            })?;
            text.lines().next().unwrap_or("").trim().to_string()
        }
    };
    // A header value must be visible ASCII; anything else could never match a request.
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid(
            "server.auth_token",
            "<hidden>",
            "must be non-empty visible ASCII without spaces",
        ));
    }
    Ok(Some(token))
}

/// Decodes hex (either case, no separators).
pub fn hex(text: &str) -> Result<Vec<u8>, &'static str> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        return Err("hex must have an even number of digits");
    }
    let digit = |b: u8| char::from(b).to_digit(16).ok_or("not hex");
    text.as_bytes()
        .chunks(2)
        .map(|pair| Ok((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_is_the_default() {
        assert_eq!(Config::embedded(), Config::default());
        let s = Config::default().settings().unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:9820");
        assert_eq!(s.max_message_size, 128 << 20);
        assert_eq!(s.host_budget, HostBudget::Auto);
        assert_eq!(s.backend, BackendChoice::Auto);
    }

    #[test]
    fn files_override_only_what_they_name() {
        let c = Config::parse(
            "[memory]\nhost_budget = \"2GiB\"\n[server]\nlisten = \"127.0.0.1:0\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let s = c.settings().unwrap();
        assert_eq!(s.host_budget, HostBudget::Fixed(2 << 30));
        assert_eq!(s.listen.port(), 0);
        assert_eq!(s.metrics_listen.unwrap().port(), 9821);
    }

    #[test]
    fn bad_values_name_their_key() {
        let err = |text: &str| {
            Config::parse(text, Path::new("t.toml"))
                .and_then(|c| c.settings().map(drop))
                .unwrap_err()
                .to_string()
        };
        assert!(err("[server]\nlisten = \"nowhere\"").contains("server.listen"));
        assert!(err("[server]\nlisten = \"0.0.0.0:9820\"").contains("loopback"));
        assert!(err("[prover]\nbackend = \"tpu\"").contains("prover.backend"));
        assert!(err("[memory]\nhost_budget = \"lots\"").contains("memory.host_budget"));
        assert!(err("[server]\nlisten_on = 1").contains("listen_on"));
        let remote = "[server]\nlisten = \"0.0.0.0:9820\"\nauth_token = \"s3cret\"";
        let c = Config::parse(remote, Path::new("t.toml")).unwrap();
        assert_eq!(c.settings().unwrap().auth_token.as_deref(), Some("s3cret"));
    }

    /// docs/config.md documents every key of the embedded default, and its examples parse.
    #[test]
    fn the_reference_page_covers_every_key() {
        let page = include_str!("../../../docs/config.md");
        let default: toml::Table = toml::from_str(DEFAULT_CONFIG).unwrap();
        for (section, keys) in &default {
            assert!(page.contains(&format!("## `[{section}]`")), "[{section}]");
            for key in keys.as_table().unwrap().keys() {
                assert!(page.contains(&format!("| `{key}` |")), "{section}.{key}");
            }
        }
        let examples: Vec<&str> = page
            .split("```toml")
            .skip(1)
            .map(|block| block.split("```").next().unwrap())
            .collect();
        assert!(examples.len() >= 2);
        for example in examples {
            let config = Config::parse(example, Path::new("docs/config.md")).unwrap();
            if config.server.auth_token_file.is_empty() {
                config.settings().unwrap();
            }
        }
    }

    #[test]
    fn hex_decodes() {
        assert_eq!(hex("00ffA0"), Ok(vec![0, 255, 160]));
        assert!(hex("abc").is_err());
        assert!(hex("zz").is_err());
    }
}
