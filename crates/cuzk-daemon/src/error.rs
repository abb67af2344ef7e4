//! The daemon's typed errors: configuration and start-up. Errors of single requests are
//! gRPC statuses, made at the service's edge (see `convert`).

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file at `path` could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The file at `path` is not valid configuration TOML.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line.
        #[source]
        source: Box<toml::de::Error>,
    },

    /// Key `key` has value `value`, which is invalid: `reason`.
    #[error("{key} = {value:?} {reason}")]
    Invalid {
        /// The key, with its section (`server.listen`).
        key: &'static str,
        /// The value given.
        value: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// Why the daemon did not start. The binary prints it and exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// The `what` listener could not be bound to `addr`.
    #[error("cannot listen on {addr} ({what}): {source}{}", in_use_hint(source))]
    Bind {
        /// Which endpoint (`gRPC`, `metrics`).
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The host memory budget could not be sized.
    #[error("host memory budget: {0}")]
    Memory(#[from] cuzk_mem::MemError),

    /// The CUDA backend did not start (or its test fault plan is malformed).
    #[error("CUDA backend: {0}")]
    Backend(#[from] cuzk_gpu::GpuError),

    /// The scheduler did not start.
    #[error("scheduler: {0}")]
    Scheduler(#[from] cuzk_sched::StartError),

    /// Preloading circuit `circuit` failed: `reason`.
    #[error("preloading {circuit}: {reason}")]
    Preload {
        /// The circuit named in `[[preload]]`.
        circuit: String,
        /// What failed.
        reason: String,
    },

    /// The runtime could not be built or a task failed to start.
    #[error("runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

fn in_use_hint(e: &std::io::Error) -> &'static str {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        " (is another cuzk-daemon, or another program, using this address?)"
    } else {
        ""
    }
}
