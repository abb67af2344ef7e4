//! The CUDA backend's typed errors, and how they reach the scheduler.

use cuzk_cuda::CudaError;
use cuzk_mem::MemError;
use cuzk_plugin::BackendError;

/// Why the CUDA backend could not start, place parameters, prepare or prove.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No CUDA device could be used: `reason`.
    #[error("no CUDA device to use: {reason}")]
    NoDevice {
        /// Why (no driver, no device, the driver's error).
        reason: String,
    },

    /// Setting `what` is invalid: `reason`.
    #[error("invalid CUDA backend setting {what}: {reason}")]
    Config {
        /// The setting.
        what: &'static str,
        /// Why.
        reason: String,
    },

    /// A CUDA call on device `ordinal` failed.
    #[error("device {ordinal}: {source}")]
    Cuda {
        /// The device's ordinal.
        ordinal: usize,
        /// The driver's error (boxed, as the large errors below).
        #[source]
        source: Box<CudaError>,
    },

    /// The VRAM budget of device `ordinal` refused or could not be made.
    #[error("VRAM budget of device {ordinal}: {source}")]
    Budget {
        /// The device's ordinal.
        ordinal: usize,
        /// The budget's error.
        #[source]
        source: MemError,
    },

    /// The GPU prover failed (shape mismatch, unsatisfied constraint, a kernel, VRAM).
    /// Boxed: the prover's error is large and this one travels in every result.
    #[error(transparent)]
    Prover(Box<cuzk_prover::Error>),

    /// Device `ordinal` has no room for the parameters of `circuit_key`, even streamed:
    /// `needed` bytes (pinned parameters and one proof's working set) of a `capacity`-byte
    /// budget.
    #[error(
        "device {ordinal} has no room for the parameters of {circuit_key}: {needed} bytes needed \
         (parameters kept there and one proof's working set), budget {capacity} bytes; evict \
         pinned parameters or raise the VRAM budget"
    )]
    NoRoom {
        /// The device's ordinal.
        ordinal: usize,
        /// The circuit.
        circuit_key: String,
        /// Bytes the placement needs.
        needed: u64,
        /// The budget's capacity.
        capacity: u64,
    },

    /// One pinned set of circuit `circuit_key` (`needed` bytes with the pool's size classes)
    /// is larger than device `ordinal`'s whole pinned pool (`capacity` bytes).
    #[error(
        "the pinned buffers of one partition of {circuit_key} take {needed} bytes, more than \
         device {ordinal}'s whole pinned pool ({capacity}); raise [cuda] pinned_memory"
    )]
    PinnedPoolTooSmall {
        /// The device's ordinal.
        ordinal: usize,
        /// The circuit.
        circuit_key: String,
        /// Bytes one set takes in the pool.
        needed: u64,
        /// The pool's capacity.
        capacity: u64,
    },

    /// Test-only fault: proof `proof`'s device allocation of `bytes` bytes was made to fail
    /// (`CUZK_TEST_FAIL_GPU_ALLOC`), and the driver refused it with `source`.
    #[error(
        "GPU allocation failed (injected test fault CUZK_TEST_FAIL_GPU_ALLOC, proof {proof}): \
         {bytes} bytes on device {ordinal}: {source}"
    )]
    InjectedFault {
        /// The proof's number.
        proof: u64,
        /// The device's ordinal.
        ordinal: usize,
        /// Bytes asked for.
        bytes: u64,
        /// The driver's refusal.
        #[source]
        source: Box<CudaError>,
    },

    /// Test-only fault: the impossible allocation of `bytes` bytes succeeded on device
    /// `ordinal`, so no fault could be injected.
    #[error("injected test fault: allocating {bytes} bytes on device {ordinal} did not fail")]
    FaultNotInjected {
        /// The device's ordinal.
        ordinal: usize,
        /// Bytes asked for.
        bytes: u64,
    },
}

impl From<cuzk_prover::Error> for GpuError {
    fn from(e: cuzk_prover::Error) -> Self {
        GpuError::Prover(Box::new(e))
    }
}

impl From<cuzk_groth16::Error> for GpuError {
    fn from(e: cuzk_groth16::Error) -> Self {
        GpuError::Prover(Box::new(e.into()))
    }
}

impl GpuError {
    /// The scheduler's form: the reference's errors (the inputs' fault: a shape, an
    /// unsatisfied constraint) stay typed, the rest name the device.
    pub(crate) fn into_backend(self, device: usize) -> BackendError {
        match self {
            GpuError::Prover(e) => match *e {
                cuzk_prover::Error::Groth16(e) => BackendError::Prover(Box::new(e)),
                other => GpuError::Prover(Box::new(other)).on_device(device),
            },
            other => other.on_device(device),
        }
    }

    fn on_device(self, device: usize) -> BackendError {
        BackendError::Device {
            backend: crate::backend::NAME.to_string(),
            device,
            source: Box::new(self),
        }
    }

    pub(crate) fn cuda(ordinal: usize) -> impl FnOnce(CudaError) -> GpuError {
        move |source| GpuError::Cuda {
            ordinal,
            source: Box::new(source),
        }
    }

    pub(crate) fn budget(ordinal: usize) -> impl FnOnce(MemError) -> GpuError {
        move |source| GpuError::Budget { ordinal, source }
    }
}
