//! The prover-backend interface the scheduler drives, and its lanes.

mod cpu;

pub use cpu::CpuBackend;

use crate::Shape;
use cuzk_field::Scalar;
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_synth::{Pce, Witness};
use std::fmt;

/// One worker lane: a device and one of its workers. Each lane proves one partition at a
/// time, on a thread of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane {
    /// The device's index.
    pub device: usize,
    /// The worker's index on that device.
    pub worker: usize,
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d{}w{}", self.device, self.worker)
    }
}

/// A backend's lanes: `devices` × `workers_per_device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaneLayout {
    /// Devices (GPUs; for the CPU backend, abstract).
    pub devices: usize,
    /// Workers per device (`gpu_workers_per_device`): more than one lets one worker upload
    /// while another computes.
    pub workers_per_device: usize,
}

impl LaneLayout {
    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.devices.saturating_mul(self.workers_per_device)
    }

    /// Whether there are no lanes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every lane, device-major: all of device 0's workers, then device 1's, ….
    pub fn lanes(&self) -> impl Iterator<Item = Lane> + '_ {
        (0..self.devices).flat_map(move |device| {
            (0..self.workers_per_device).map(move |worker| Lane { device, worker })
        })
    }
}

impl fmt::Display for LaneLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} device(s) × {} worker(s)",
            self.devices, self.workers_per_device
        )
    }
}

/// What one proof needs: the circuit's key, parameters and PCE, a witness, and the
/// randomness r, s.
#[derive(Clone, Copy, Debug)]
pub struct ProveInput<'a> {
    /// The circuit's key, which a backend may use to keep its parameters resident.
    pub circuit_key: &'a str,
    /// The parameters.
    pub params: &'a PreparedParameters,
    /// The circuit's recorded constraints.
    pub pce: &'a Pce,
    /// The assignments.
    pub witness: &'a Witness,
    /// The proof's randomness r.
    pub r: Scalar,
    /// The proof's randomness s.
    pub s: Scalar,
}

/// Something that turns a witness into a proof: the CPU prover here, the CUDA prover in
/// the GPU crates. Called concurrently from every lane's thread.
pub trait Backend: Send + Sync + 'static {
    /// A short name for logs and metrics, e.g. `cpu`.
    fn name(&self) -> &str;

    /// The lanes the scheduler runs for this backend.
    fn lanes(&self) -> LaneLayout;

    /// Host memory one partition of `shape` holds from the start of its synthesis to the
    /// end of its proof; the scheduler reserves this much before starting it. The default
    /// is the CPU reference prover's estimate, [`Shape::cpu_prover_bytes`].
    fn partition_bytes(&self, shape: &Shape) -> u64 {
        shape.cpu_prover_bytes()
    }

    /// Proves one partition on `lane`.
    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError>;
}

/// Why a backend could not prove.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The Groth16 prover rejected its inputs (a shape or parameter mismatch, an
    /// unsatisfied constraint) or failed; the error names the offending value.
    #[error(transparent)]
    Prover(#[from] cuzk_groth16::Error),

    /// Lane `lane` is not one of the backend's `layout`.
    #[error("lane {lane} is not one of this backend's {layout}")]
    NoSuchLane {
        /// The lane asked for.
        lane: Lane,
        /// The backend's lanes.
        layout: LaneLayout,
    },

    /// Backend `backend` failed: `message`.
    #[error("backend {backend}: {message}")]
    Failed {
        /// The backend's name.
        backend: String,
        /// What went wrong.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_list_their_lanes_device_major() {
        let layout = LaneLayout {
            devices: 2,
            workers_per_device: 2,
        };
        let lanes: Vec<String> = layout.lanes().map(|l| l.to_string()).collect();
        assert_eq!(lanes, ["d0w0", "d0w1", "d1w0", "d1w1"]);
        assert_eq!(layout.len(), 4);
        assert!(LaneLayout {
            devices: 0,
            workers_per_device: 3
        }
        .is_empty());
    }
}
