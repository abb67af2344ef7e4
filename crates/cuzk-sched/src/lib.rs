//! The cuzk proving scheduler: requests in, verified Groth16 proofs out, within a memory
//! budget.
//!
//! ```text
//! submit(Request) ─► registry: kind name → Instance (a circuit is code, a request is data)
//!        │
//!        ▼ waiting jobs, ordered CRITICAL > HIGH > NORMAL > LOW, then oldest first
//! dispatcher ── host Budget: a partition starts only once its memory is reserved
//!        │      a job is pinned to one device when it starts (the least loaded)
//!        ▼ synthesis pool (CPU threads): PCE + parameters from the setup cache, witness,
//!        │ then Backend::prepare for the job's device (the GPU's pinned a/b/c)
//!        ▼ ready partitions (bounded lookahead per device: one per lane by default)
//! lanes: devices × workers per device, each proving partitions of its own device
//!        ▼ self-verification (on by default) ─► JobHandle resolves
//! ```
//!
//! - [`Scheduler`] is the API: [`Scheduler::submit`] returns a [`JobHandle`] that is a
//!   future (await it in a tokio or any other runtime) or can be waited on with
//!   [`JobHandle::wait_blocking`]; [`Scheduler::status`], [`Scheduler::cancel`] and
//!   [`Scheduler::metrics`] never block on proving work.
//! - The plug-in interface is [`plugin`] (the `cuzk-plugin` crate): a `Backend` proves
//!   ([`CpuBackend`] wraps cuzk-groth16's CPU prover; the CUDA backend of cuzk-gpu
//!   implements the same trait against that crate alone: this one links no GPU code), a
//!   `CircuitKind` reads requests. A backend may prepare partitions on the synthesis
//!   workers ahead of its lanes, keep parameters on its devices and generate parameters.
//!   This crate's root is the client API: [`Scheduler`], [`Request`], [`Inputs`],
//!   [`JobHandle`], the errors and the metrics.
//! - Every job is pinned to one device of the backend when its first partition starts;
//!   all its partitions are synthesized for, prepared for and proved on that device.
//! - [`Registry`] maps kind names to [`CircuitKind`]s (built in: [`Sha256Kind`] as
//!   `sha256`, [`SyntheticPoRepKind`] as `synthetic-porep`) and caches each circuit's PCE
//!   and parameters, generating parameters where none were supplied.
//!
//! The scheduler runs on its own threads (one dispatcher, the synthesis workers, one thread
//! per lane): proving is long CPU- or GPU-bound work that must not occupy an async
//! runtime's workers, and a daemon's runtime only submits and awaits.
#![forbid(unsafe_code)]

mod config;
mod cpu;
mod error;
mod metrics;
mod registry;
mod scheduler;
mod types;

pub use config::SchedulerConfig;
pub use cpu::CpuBackend;
/// The plug-in interface (backends, circuit kinds and what they exchange): the
/// `cuzk-plugin` crate, which a backend or a kind depends on instead of this one.
pub use cuzk_plugin as plugin;
pub use cuzk_plugin::Inputs;
// The plug-in types the scheduler's modules use, by their short names.
use cuzk_plugin::{
    AnyBackend, BackendError, DeviceStats, EvictReport, InputError, Instance, Lane, LaneLayout,
    LoadReport, MemoryStats, PrepareInput, Prepared, ProveInput, ProvePreparedInput, Setup,
};
pub use error::{ControlError, JobError, Phase, PreloadError, ProveError, StartError, SubmitError};
pub use metrics::{JobCounts, LaneStats, MetricsSnapshot, PartitionCounts, SynthesisStats};
pub use registry::{Registry, RegistryError, SetupError, Sha256Kind, SyntheticPoRepKind};
pub use scheduler::{JobHandle, Parsed, PreloadReport, Scheduler, ShutdownReport};
pub use types::{
    JobId, JobOutput, JobState, JobStatus, JobTimings, PartitionTimings, Priority, Request,
};
