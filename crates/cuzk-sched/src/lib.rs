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
//! - [`Backend`] is what proves; [`CpuBackend`] wraps cuzk-groth16's CPU prover. A CUDA
//!   backend (cuzk-gpu) implements the same trait in a crate of its own: this crate links
//!   no GPU code. A backend may prepare partitions on the synthesis workers ahead of its
//!   lanes ([`Backend::prepare`]), keep parameters on its devices ([`Backend::load`],
//!   [`Backend::evict`]) and generate parameters ([`Backend::parameter_generator`]).
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

mod backend;
mod config;
mod error;
mod metrics;
mod registry;
mod scheduler;
mod shape;
mod types;

pub use backend::{
    Backend, BackendError, CpuBackend, EvictReport, Lane, LaneLayout, LoadReport,
    ParameterGenerator, PrepareInput, Prepared, ProveInput, ProvePreparedInput,
};
pub use config::SchedulerConfig;
pub use error::{ControlError, JobError, Phase, PreloadError, ProveError, StartError, SubmitError};
pub use metrics::{
    DeviceParameterStats, DeviceStats, JobCounts, LaneStats, MemoryStats, MetricsSnapshot,
    PartitionCounts, SynthesisStats,
};
pub use registry::{
    CircuitKind, InputError, Instance, LoadError, MissingFile, ReadySetup, Registry, RegistryError,
    Setup, SetupError, Sha256Kind, SyntheticPoRepKind,
};
pub use scheduler::{JobHandle, Parsed, PreloadReport, Scheduler, ShutdownReport};
pub use shape::Shape;
pub use types::{
    Inputs, JobId, JobOutput, JobState, JobStatus, JobTimings, PartitionTimings, Priority, Request,
};
