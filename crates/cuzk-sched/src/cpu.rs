//! The CPU backend: cuzk-groth16's reference prover, for machines without a GPU and as
//! the oracle of the GPU backends.

use cuzk_groth16::Proof;
use cuzk_plugin::{Backend, BackendError, Lane, LaneLayout, ProveInput};

/// Proves with cuzk-groth16's CPU prover. Every proof already uses all cores (rayon), so
/// one lane is the sensible default; more lanes overlap one proof's serial stretches with
/// another's parallel ones, at the cost of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuBackend {
    layout: LaneLayout,
}

impl CpuBackend {
    /// One device with one lane.
    pub fn new() -> CpuBackend {
        CpuBackend::with_lanes(1, 1)
    }

    /// `devices` abstract devices × `workers_per_device` lanes, e.g. to exercise a
    /// multi-device layout on a CPU-only machine.
    pub fn with_lanes(devices: usize, workers_per_device: usize) -> CpuBackend {
        CpuBackend {
            layout: LaneLayout {
                devices,
                workers_per_device,
            },
        }
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        CpuBackend::new()
    }
}

impl Backend for CpuBackend {
    type Prepared = ();

    fn name(&self) -> &str {
        "cpu"
    }

    fn lanes(&self) -> LaneLayout {
        self.layout
    }

    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        if lane.device >= self.layout.devices || lane.worker >= self.layout.workers_per_device {
            return Err(BackendError::NoSuchLane {
                lane,
                layout: self.layout,
            });
        }
        Ok(cuzk_groth16::prove(
            input.params,
            input.pce,
            input.witness,
            input.r,
            input.s,
        )?)
    }
}
