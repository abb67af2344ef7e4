//! The cuzk proving daemon: a gRPC service over the cuzk scheduler.
//!
//! ```text
//! client ─gRPC─► auth ─► ProvingService ─► Engine ─► cuzk_sched::Scheduler
//!                         (cuzk.v1)          │ job table: outcomes for AwaitProof
//!                                            └ counters ─► /metrics, GetMetrics
//! ```
//!
//! - The wire interface is `cuzk.v1`, compatible with Curio's `cuzk.v1.ProvingEngine`, from
//!   the `cuzk-proto` crate (re-exported as [`proto`]): the generated server and client, and
//!   the compiled descriptor set that the compatibility test reads.
//! - [`Config`] is the TOML configuration (the embedded default is [`DEFAULT_CONFIG`]);
//!   [`Settings`] is the checked form [`server::run`] takes.
//! - [`server::Listeners::bind`] binds before anything else so that a taken port fails
//!   at once; [`server::run`] serves until its shutdown future resolves, then drains.
//!
//! The scheduler speaks Rust types; the mapping between them and the wire, and of its errors
//! to gRPC codes, happens here (`convert`).
#![forbid(unsafe_code)]

mod auth;
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

/// The generated protobuf types, server and client of `cuzk.v1` (the `cuzk-proto` crate).
pub use cuzk_proto as proto;
