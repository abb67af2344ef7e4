//! The CUDA backend of the cuzk scheduler: [`GpuBackend`] implements `cuzk_plugin::Backend`
//! with cuzk-prover's GPU prover.
//!
//! ```text
//!                     ┌ device 0: VramBudget (one ledger) ──────────────────────────────┐
//! synthesis worker ──►│ prepare (preparer prover: a, b, c into pooled pinned memory)    │
//!  (job pinned to d0) │ parameters: resident per circuit key, shared by the lanes       │
//!                     │ lane d0w0: GpuProver (compute + copy stream) ─┐ each proof       │
//!                     │ lane d0w1: GpuProver (compute + copy stream) ─┘ reserves its set │
//!                     └──────────────────────────────────────────────────────────────────┘
//!                     ┌ device 1: the same ───────────────────────────────────────────────┐
//! ```
//!
//! - Lanes: `workers_per_device` [`cuzk_prover::GpuProver`]s per device, each with its
//!   own streams. The lanes of a device share one `VramBudget`: every proof reserves its
//!   working set from it before allocating, resident parameters hold their bytes, so the lanes
//!   together never exceed it.
//! - Overlap: the scheduler calls [`GpuBackend`]'s `prepare` on a synthesis worker, so a
//!   partition's CPU work (evaluating a, b, c into pinned memory) is done before a lane is
//!   free; inside a proof the upload overlaps the first MSMs, and a second lane's upload and
//!   compute overlap the first lane's.
//! - Residency ([`residency`]): parameters are placed on a device once per circuit key, on
//!   first use or by preloading, resident when they fit beside the largest working set (idle
//!   parameters of other circuits are evicted, least recently used first, to make room),
//!   else streamed from the host by every MSM. Idle eviction after a configurable time;
//!   preloaded parameters are pinned.
//! - Parameter generation on the GPU ([`GpuBackend`]'s generator) for circuits without
//!   supplied parameters, falling back to the CPU generator.
//! - A test-only fault ([`FaultPlan`], `CUZK_TEST_FAIL_GPU_ALLOC`): chosen proofs fail a real
//!   device allocation, so that tests see one job fail alone.
#![forbid(unsafe_code)]

mod backend;
mod config;
mod device;
mod error;
mod paramgen;
pub mod residency;
pub mod sizes;
mod sweeper;

pub use backend::{GpuBackend, GpuPrepared};
pub use config::{FaultPlan, GpuConfig, ParamgenChoice, DEFAULT_PINNED_IDLE, FAULT_ENV};
pub use cuzk_prover::Residency;
pub use error::GpuError;

/// The number of CUDA devices the driver reports; an error says why there are none to ask
/// (no driver, no device, no permission). Loads the driver, builds no context.
pub fn device_count() -> Result<usize, cuzk_cuda::CudaError> {
    cuzk_cuda::device_count()
}
