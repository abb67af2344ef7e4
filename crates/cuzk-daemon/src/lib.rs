//! The cuzk proving daemon: a gRPC service over the cuzk scheduler.
//!
//! ```text
//! client ─gRPC─► auth ─► ProvingService ─► Engine ─► cuzk_sched::Scheduler
//!                         (cuzk.v1)          │ job table: outcomes for AwaitProof
//!                                            └ counters ─► /metrics, GetMetrics
//! ```
//!
//! - The wire interface is `proto/cuzk/v1/proving.proto`, compatible with Curio's
//!   `cuzk.v1.ProvingEngine`; [`proto`] holds the generated server and client, and the
//!   compiled descriptor set that the compatibility test reads.
//! - [`Config`] is the TOML configuration (the embedded default is [`DEFAULT_CONFIG`]);
//!   [`Settings`] is the checked form [`server::run`] takes.
//! - [`server::Listeners::bind`] binds before anything else so that a taken port fails
//!   at once; [`server::run`] serves until its shutdown future resolves, then drains.
//!
//! This is the only crate that knows protobuf: the scheduler speaks Rust types, and the
//! mapping of its errors to gRPC codes happens here (`convert`).

mod auth;
pub mod codec;
mod config;
mod convert;
mod engine;
mod error;
mod http;
mod jobs;
mod metrics;
pub mod server;
mod service;
mod srs;

pub use auth::BearerAuth;
pub use config::{
    BackendChoice, Config, CudaSettings, FilecoinSettings, Preload, Settings, DEFAULT_CONFIG,
};
pub use engine::{Engine, VERSION};
pub use error::{ConfigError, StartError};
pub use service::ProvingService;
pub use srs::SrsAccess;

/// The generated protobuf types, server and client of `cuzk.v1`.
pub mod proto {
    // Generated code: its shape is prost's and tonic's, not ours to lint.
    #![allow(missing_docs, clippy::all, clippy::pedantic, rust_2018_idioms)]
    tonic::include_proto!("cuzk.v1");

    /// The compiled `FileDescriptorSet` of proving.proto (what the compatibility test
    /// compares with Curio's interface).
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/cuzk_v1_descriptor.bin"));

    /// The service's full name, as health checks and load balancers address it.
    pub const SERVICE_NAME: &str = "cuzk.v1.ProvingEngine";
}
