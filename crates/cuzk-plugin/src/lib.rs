//! The plug-in interface of the cuzk scheduler, in a crate of its own so that a backend or a
//! circuit kind depends on it alone, not on the scheduler (the way TiKV's `engine_traits`
//! sits between its engines and their users).
//!
//! - [`Backend`] proves partitions on its lanes ([`Lane`], [`LaneLayout`]): the CPU backend of
//!   `cuzk-sched`, the CUDA backend of `cuzk-gpu`. A backend may prepare partitions ahead of
//!   its lanes ([`Backend::prepare`], its own [`Prepared`] form), keep parameters on its
//!   devices ([`Backend::load`], [`Backend::evict`]), generate parameters
//!   ([`ParameterGenerator`]) and report its devices ([`DeviceStats`]). The scheduler holds
//!   it as an [`AnyBackend`], which every `Backend` is, carrying prepared partitions as
//!   [`Prepared`] without either side naming the other's types.
//! - [`CircuitKind`] reads a request's [`Inputs`] into an [`Instance`]: the circuit's key,
//!   [`Shape`], partitions, witnesses and public inputs, and optionally its own setup
//!   ([`ReadySetup`]); the sample kinds of `cuzk-sched`, the Filecoin kinds of
//!   `cuzk-filecoin`. [`inputs`] has the field readers kinds share, with typed errors
//!   ([`InputError`]).
//! - [`share`] tells a kind how many CPU threads one partition's synthesis may use.
//! - [`Setup`] is a circuit's PCE and parameters as the scheduler hands them to backends.
#![forbid(unsafe_code)]

mod backend;
pub mod inputs;
mod kind;
mod setup;
mod shape;
pub mod share;
mod stats;

pub use backend::{
    AnyBackend, Backend, BackendError, EvictReport, Lane, LaneLayout, LoadReport,
    ParameterGenerator, PrepareInput, Prepared, ProveInput, ProvePreparedInput,
};
pub use inputs::{InputError, Inputs};
pub use kind::{CircuitKind, Instance};
pub use setup::{LoadError, MissingFile, ReadySetup, Setup};
pub use shape::Shape;
pub use stats::{DeviceParameterStats, DeviceStats, MemoryStats};
