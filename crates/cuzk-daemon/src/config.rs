//! The daemon's TOML configuration: the embedded default, files layered on top, and
//! validation into the settings the daemon runs with.

use crate::error::ConfigError;
use cuzk_gpu::Residency;
use cuzk_mem::{parse_size, HostBudget, VramPolicy};
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
    /// The CUDA backend.
    pub cuda: CudaSection,
    /// The host memory budget.
    pub memory: MemorySection,
    /// Scheduler limits.
    pub scheduler: SchedulerSection,
    /// Logging.
    pub log: LogSection,
    /// The Filecoin proof kinds: where their parameters are and what may be done to them.
    pub filecoin: FilecoinSection,
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
    /// `auto` or a size: most request bytes one call may have in flight.
    pub request_bytes_per_call: String,
    /// `auto` or a size: most request bytes all calls together may have in flight.
    pub request_bytes_in_flight: String,
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
            max_message_size: "256MiB".into(),
            request_bytes_per_call: "auto".into(),
            request_bytes_in_flight: "auto".into(),
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
    /// `auto`, `cpu` or `cuda`.
    pub backend: String,
    /// Device ordinals to use; empty: all.
    pub devices: Vec<usize>,
    /// Lanes per device; 0: the backend's default (1 on the CPU, 2 on a GPU).
    pub workers_per_device: usize,
    /// Self-verification.
    pub verify_proofs: bool,
}

impl Default for ProverSection {
    fn default() -> Self {
        ProverSection {
            backend: "auto".into(),
            devices: Vec::new(),
            workers_per_device: 0,
            verify_proofs: true,
        }
    }
}

/// `[cuda]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CudaSection {
    /// `auto` (free memory at start minus `vram_margin`) or a size per device.
    pub vram_budget: String,
    /// What `vram_budget = "auto"` leaves free.
    pub vram_margin: String,
    /// `auto` or a size: one MSM's work buffers.
    pub msm_vram: String,
    /// `auto`, `resident` or `streamed`.
    pub residency: String,
    /// Evict parameters idle this long (seconds); 0: never.
    pub idle_evict_secs: u64,
    /// `auto` or a size: each device's pinned host pool.
    pub pinned_memory: String,
    /// Free pinned-pool buffers idle this long (seconds; not those pre-warmed for a preloaded
    /// circuit); 0: keep them.
    pub pinned_idle_secs: u64,
    /// `auto` (on the GPU, the CPU as fallback) or `cpu`.
    pub paramgen: String,
    /// Evaluate a, b, c on the GPU (the circuit's PCE beside resident parameters, when the
    /// budget holds it); false: always on the host.
    pub device_eval: bool,
    /// Keep the device memory proofs free mapped (up to the VRAM budget) for the next
    /// proofs; false: the driver unmaps it at every synchronisation.
    pub keep_freed_vram: bool,
}

impl Default for CudaSection {
    fn default() -> Self {
        CudaSection {
            vram_budget: "auto".into(),
            vram_margin: "512MiB".into(),
            msm_vram: "auto".into(),
            residency: "auto".into(),
            idle_evict_secs: 0,
            pinned_memory: "auto".into(),
            pinned_idle_secs: 30,
            paramgen: "auto".into(),
            device_eval: true,
            keep_freed_vram: true,
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
    /// Threads of the shared CPU pool (synthesis, evaluation, CPU proving), 0 for automatic.
    pub cpu_threads: usize,
    /// Most unfinished jobs.
    pub max_queued_jobs: usize,
    /// Finished jobs remembered.
    pub finished_history: usize,
    /// Seconds a Prove job keeps running after its last waiter left.
    pub retry_grace_secs: u64,
}

impl Default for SchedulerSection {
    fn default() -> Self {
        SchedulerSection {
            synthesis_workers: 0,
            lookahead: 0,
            cpu_threads: 0,
            max_queued_jobs: 1024,
            finished_history: 1024,
            retry_grace_secs: 300,
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

/// `[filecoin]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct FilecoinSection {
    /// The Filecoin parameter folder; empty: `FIL_PROOFS_PARAMETER_CACHE`, else
    /// `/var/tmp/filecoin-proof-parameters`.
    pub param_dir: String,
    /// Generate missing parameters of sectors up to this size (a test setup); `"0"`: never.
    pub generate_up_to: String,
    /// Check every parameter file's digest.
    pub verify_digests: bool,
    /// Write generated parameters to their `.params` file (when the disk has room).
    pub write_generated: bool,
    /// Make PoRep, PoSt and SnapDeals witnesses with the native generator rather than the
    /// circuit's gadgets.
    pub native_witness: bool,
}

impl Default for FilecoinSection {
    fn default() -> Self {
        FilecoinSection {
            param_dir: String::new(),
            generate_up_to: "0".into(),
            verify_digests: true,
            write_generated: true,
            native_witness: true,
        }
    }
}

/// What the Filecoin proof kinds are served with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilecoinSettings {
    /// The parameter folder (PCEs are kept there too when it is writable).
    pub param_dir: PathBuf,
    /// Missing parameters of sectors up to this many bytes are generated; 0: never.
    pub generate_up_to: u64,
    /// Whether parameter digests are checked.
    pub verify_digests: bool,
    /// Whether generated parameters are written to their `.params` file.
    pub write_generated: bool,
    /// Whether PoRep, PoSt and SnapDeals witnesses are made natively.
    pub native_witness: bool,
}

/// filecoin-proofs' default parameter folder.
pub const FILECOIN_DEFAULT_PARAM_DIR: &str = "/var/tmp/filecoin-proof-parameters";

impl FilecoinSection {
    fn settings(&self) -> Result<FilecoinSettings, ConfigError> {
        let param_dir = match self.param_dir.trim() {
            "" => std::env::var_os("FIL_PROOFS_PARAMETER_CACHE")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(FILECOIN_DEFAULT_PARAM_DIR)),
            dir => PathBuf::from(dir),
        };
        Ok(FilecoinSettings {
            param_dir,
            generate_up_to: size("filecoin.generate_up_to", &self.generate_up_to)?,
            verify_digests: self.verify_digests,
            write_generated: self.write_generated,
            native_witness: self.native_witness,
        })
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
    /// The CUDA backend when a driver reports at least one device, else the CPU.
    Auto,
    /// The CPU backend.
    Cpu,
    /// The CUDA backend; start-up fails without a usable device.
    Cuda,
}

/// The CUDA backend's settings, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaSettings {
    /// How each device's VRAM budget is sized.
    pub vram: VramPolicy,
    /// One MSM's work allowance (`None`: 8 GiB, at most a quarter of the budget).
    pub msm_vram: Option<u64>,
    /// Where parameters live.
    pub residency: Residency,
    /// Idle eviction.
    pub idle_evict: Option<Duration>,
    /// Each device's pinned pool (`None`: a quarter of the host budget over the devices,
    /// at most 64 GiB each).
    pub pinned_memory: Option<u64>,
    /// How long a pinned-pool buffer may sit idle (`None`: kept).
    pub pinned_idle: Option<Duration>,
    /// Parameters generated on the GPU (else the CPU).
    pub gpu_paramgen: bool,
    /// a, b, c evaluated on the GPU where the budget allows.
    pub device_eval: bool,
    /// Freed device memory kept mapped for the next proofs.
    pub keep_freed_vram: bool,
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
    /// Most request bytes one call may have in flight (`None`: automatic, see
    /// `server::admission::Limits::resolve`).
    pub request_bytes_per_call: Option<u64>,
    /// Most request bytes all calls may have in flight (`None`: automatic).
    pub request_bytes_in_flight: Option<u64>,
    /// Bearer token, if any.
    pub auth_token: Option<String>,
    /// Grace period on shutdown.
    pub shutdown_grace: Duration,
    /// How long a Prove job keeps running after its last waiter left, for a retry to
    /// attach (0: cancelled at once).
    pub retry_grace: Duration,
    /// Backend.
    pub backend: BackendChoice,
    /// Device ordinals (empty: all).
    pub devices: Vec<usize>,
    /// Lanes per device (`None`: the backend's default).
    pub workers_per_device: Option<usize>,
    /// The CUDA backend's settings.
    pub cuda: CudaSettings,
    /// Host budget policy.
    pub host_budget: HostBudget,
    /// Scheduler knobs.
    pub scheduler: SchedulerConfig,
    /// Threads of the shared CPU pool; `None`: automatic.
    pub cpu_threads: Option<usize>,
    /// Log filter.
    pub log_filter: String,
    /// Circuits to set up before ready.
    pub preload: Vec<Preload>,
    /// The Filecoin proof kinds' parameters.
    pub filecoin: FilecoinSettings,
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
        let request_size = |key, text: &str| match text.trim() {
            "auto" => Ok(None),
            other => match size(key, other)? {
                n if n < 1 << 20 => Err(invalid(key, other, "must be at least 1MiB (or \"auto\")")),
                n => Ok(Some(n)),
            },
        };
        let request_bytes_per_call =
            request_size("server.request_bytes_per_call", &s.request_bytes_per_call)?;
        let request_bytes_in_flight =
            request_size("server.request_bytes_in_flight", &s.request_bytes_in_flight)?;
        if let (Some(call), Some(total)) = (request_bytes_per_call, request_bytes_in_flight) {
            if call > total {
                return Err(invalid(
                    "server.request_bytes_per_call",
                    &s.request_bytes_per_call,
                    format!(
                        "is larger than server.request_bytes_in_flight ({}): no call could use it",
                        s.request_bytes_in_flight
                    ),
                ));
            }
        }
        let auth_token = token(s)?;
        let nonzero = |n: usize| (n > 0).then_some(n);
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
            "cuda" => BackendChoice::Cuda,
            other => {
                return Err(invalid(
                    "prover.backend",
                    other,
                    "must be \"auto\", \"cpu\" or \"cuda\"",
                ))
            }
        };
        let mut seen = std::collections::BTreeSet::new();
        if let Some(d) = self.prover.devices.iter().find(|&&d| !seen.insert(d)) {
            return Err(invalid(
                "prover.devices",
                &format!("{:?}", self.prover.devices),
                format!("names device {d} twice"),
            ));
        }
        let cuda = self.cuda.settings()?;
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
            request_bytes_per_call,
            request_bytes_in_flight,
            auth_token,
            shutdown_grace: Duration::from_secs(s.shutdown_grace_secs),
            retry_grace: Duration::from_secs(q.retry_grace_secs),
            backend,
            devices: self.prover.devices.clone(),
            workers_per_device: nonzero(self.prover.workers_per_device),
            cuda,
            host_budget,
            scheduler,
            cpu_threads: nonzero(self.scheduler.cpu_threads),
            log_filter: self.log.filter.clone(),
            preload: self.preload.clone(),
            filecoin: self.filecoin.settings()?,
        })
    }
}

impl CudaSection {
    fn settings(&self) -> Result<CudaSettings, ConfigError> {
        let auto_or_size = |key, text: &str| match text.trim() {
            "auto" => Ok(None),
            other => size(key, other).map(Some),
        };
        let margin = size("cuda.vram_margin", &self.vram_margin)?;
        let vram = match auto_or_size("cuda.vram_budget", &self.vram_budget)? {
            None => VramPolicy::Free { margin },
            Some(0) => return Err(invalid("cuda.vram_budget", "0", "must be positive")),
            Some(bytes) => VramPolicy::Fixed(bytes),
        };
        let msm_vram = auto_or_size("cuda.msm_vram", &self.msm_vram)?;
        if matches!(msm_vram, Some(b) if b < 256 << 20) {
            return Err(invalid(
                "cuda.msm_vram",
                &self.msm_vram,
                "must be at least 256MiB",
            ));
        }
        let residency = match self.residency.trim() {
            "auto" => Residency::Auto,
            "resident" => Residency::Resident,
            "streamed" => Residency::Streamed,
            other => {
                return Err(invalid(
                    "cuda.residency",
                    other,
                    "must be \"auto\", \"resident\" or \"streamed\"",
                ))
            }
        };
        let pinned_memory = auto_or_size("cuda.pinned_memory", &self.pinned_memory)?;
        if pinned_memory == Some(0) {
            return Err(invalid("cuda.pinned_memory", "0", "must be positive"));
        }
        let gpu_paramgen = match self.paramgen.trim() {
            "auto" => true,
            "cpu" => false,
            other => {
                return Err(invalid(
                    "cuda.paramgen",
                    other,
                    "must be \"auto\" or \"cpu\"",
                ))
            }
        };
        Ok(CudaSettings {
            vram,
            msm_vram,
            residency,
            idle_evict: (self.idle_evict_secs > 0)
                .then(|| Duration::from_secs(self.idle_evict_secs)),
            pinned_memory,
            pinned_idle: (self.pinned_idle_secs > 0)
                .then(|| Duration::from_secs(self.pinned_idle_secs)),
            gpu_paramgen,
            device_eval: self.device_eval,
            keep_freed_vram: self.keep_freed_vram,
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
    use cuzk_mem::DEFAULT_VRAM_MARGIN;

    #[test]
    fn the_embedded_file_is_the_default() {
        assert_eq!(Config::embedded(), Config::default());
        let s = Config::default().settings().unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:9820");
        assert_eq!(s.max_message_size, 256 << 20);
        assert_eq!(s.request_bytes_per_call, None);
        assert_eq!(s.request_bytes_in_flight, None);
        assert_eq!(s.filecoin.generate_up_to, 0);
        assert!(s.filecoin.verify_digests);
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
        assert!(err("[prover]\ndevices = [0, 0]").contains("prover.devices"));
        assert!(err("[cuda]\nresidency = \"sometimes\"").contains("cuda.residency"));
        assert!(err("[cuda]\nvram_budget = \"big\"").contains("cuda.vram_budget"));
        assert!(err("[cuda]\nmsm_vram = \"1MiB\"").contains("cuda.msm_vram"));
        assert!(err("[cuda]\nparamgen = \"tpu\"").contains("cuda.paramgen"));
        assert!(err("[filecoin]\ngenerate_up_to = \"big\"").contains("filecoin.generate_up_to"));
        let c = Config::parse(
            "[filecoin]\nparam_dir = \"/p\"\ngenerate_up_to = \"2KiB\"\nverify_digests = false",
            Path::new("t.toml"),
        )
        .unwrap();
        let f = c.settings().unwrap().filecoin;
        assert_eq!(f.param_dir, PathBuf::from("/p"));
        assert_eq!(f.generate_up_to, 2048);
        assert!(!f.verify_digests);
        assert!(err("[server]\nlisten_on = 1").contains("listen_on"));
        assert!(err("[server]\nrequest_bytes_per_call = \"1KiB\"")
            .contains("server.request_bytes_per_call"));
        assert!(err("[server]\nrequest_bytes_in_flight = \"lots\"")
            .contains("server.request_bytes_in_flight"));
        assert!(err(
            "[server]\nrequest_bytes_per_call = \"2GiB\"\nrequest_bytes_in_flight = \"1GiB\""
        )
        .contains("larger than server.request_bytes_in_flight"));
        let c = Config::parse(
            "[server]\nrequest_bytes_per_call = \"64MiB\"\nrequest_bytes_in_flight = \"1GiB\"",
            Path::new("t.toml"),
        )
        .unwrap();
        let s = c.settings().unwrap();
        assert_eq!(s.request_bytes_per_call, Some(64 << 20));
        assert_eq!(s.request_bytes_in_flight, Some(1 << 30));
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
    fn backend_and_cuda_keys_resolve() {
        let s = Config::default().settings().unwrap();
        assert_eq!(s.devices, Vec::<usize>::new());
        assert_eq!(s.workers_per_device, None);
        assert_eq!(
            s.cuda,
            CudaSettings {
                vram: VramPolicy::Free {
                    margin: DEFAULT_VRAM_MARGIN
                },
                msm_vram: None,
                residency: Residency::Auto,
                idle_evict: None,
                pinned_memory: None,
                pinned_idle: Some(Duration::from_secs(30)),
                gpu_paramgen: true,
                device_eval: true,
                keep_freed_vram: true,
            }
        );
        let text = "[prover]\nbackend = \"cuda\"\ndevices = [1, 0]\nworkers_per_device = 3\n\
                    [memory]\nhost_budget = \"64GiB\"\n\
                    [cuda]\nvram_budget = \"16GiB\"\nmsm_vram = \"2GiB\"\nresidency = \"streamed\"\n\
                    idle_evict_secs = 600\npinned_memory = \"24GiB\"\npinned_idle_secs = 0\n\
                    paramgen = \"cpu\"\ndevice_eval = false\nkeep_freed_vram = false\n";
        let s = Config::parse(text, Path::new("t.toml"))
            .unwrap()
            .settings()
            .unwrap();
        assert_eq!(s.backend, BackendChoice::Cuda);
        assert_eq!(s.devices, [1, 0]);
        assert_eq!(s.workers_per_device, Some(3));
        assert_eq!(s.host_budget, HostBudget::Fixed(64 << 30));
        assert_eq!(
            s.cuda,
            CudaSettings {
                vram: VramPolicy::Fixed(16 << 30),
                msm_vram: Some(2 << 30),
                residency: Residency::Streamed,
                idle_evict: Some(Duration::from_secs(600)),
                pinned_memory: Some(24 << 30),
                pinned_idle: None,
                gpu_paramgen: false,
                device_eval: false,
                keep_freed_vram: false,
            }
        );
        let margin = Config::parse("[cuda]\nvram_margin = \"2GiB\"", Path::new("t.toml"))
            .unwrap()
            .settings()
            .unwrap();
        assert_eq!(margin.cuda.vram, VramPolicy::Free { margin: 2 << 30 });
    }

    #[test]
    fn hex_decodes() {
        assert_eq!(hex("00ffA0"), Ok(vec![0, 255, 160]));
        assert!(hex("abc").is_err());
        assert!(hex("zz").is_err());
    }
}
