//! The GPU prover's errors: the reference's own (shapes, unsatisfied constraints, bad
//! parameters) and the device's.

use cuzk_groth16::Section;
use std::path::PathBuf;
use std::time::Duration;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong proving or generating parameters on a device.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A check of the reference failed: a shape, a witness that does not satisfy its
    /// circuit, parameters that cannot be used.
    #[error(transparent)]
    Groth16(#[from] cuzk_groth16::Error),

    /// Proving witness `index` of a batch failed.
    #[error("witness {index} of the batch: {source}")]
    InBatch {
        /// Position of the failing witness in the batch.
        index: usize,
        /// Why it failed.
        source: Box<Error>,
    },

    /// The CUDA runtime failed (allocation, copy, launch, synchronisation).
    #[error(transparent)]
    Cuda(Box<cuzk_cuda::CudaError>),

    /// An NTT on the device failed.
    #[error(transparent)]
    Ntt(Box<cuzk_ntt::NttError>),

    /// An MSM on the device failed.
    #[error(transparent)]
    Msm(Box<cuzk_msm::MsmError>),

    /// A memory budget (VRAM or the pinned pool) refused a reservation the prover needs.
    #[error("VRAM budget: {0}")]
    Budget(Box<cuzk_mem::MemError>),

    /// A point made on the device differs from the same multiple computed on the host (the
    /// GPU parameter generator spot-checks every query).
    #[error("GPU parameter generation: point {index} of section {section} is wrong")]
    GpuMismatch {
        /// The query holding the point.
        section: Section,
        /// Index of the point within its query.
        index: usize,
    },

    /// A parameter file could not be read or decoded.
    #[error("parameters {}: {source}", path.display())]
    Parameters {
        /// The file.
        path: PathBuf,
        /// Why. Boxed: the reference's error is large and this one travels in every result.
        #[source]
        source: Box<cuzk_groth16::Error>,
    },

    /// Proof `index` (of the call's batch) did not verify against the verifying key and
    /// the witness's public inputs: the circuit is not the one the parameters were made
    /// for, or the parameters are not a consistent set. The proof is not returned.
    #[error(
        "proof {index} did not verify: the circuit is not the one these parameters were made          for, or the parameters are inconsistent"
    )]
    Invalid {
        /// Position of the proof in the call's batch.
        index: usize,
    },

    /// A prepared witness is proved once: its pinned buffers went back to the pool during
    /// the first proof.
    #[error("the prepared witness was proved already (its pinned buffers are back in the pool)")]
    Proved,

    /// A PCE matrix has too many entries to be evaluated on the device (its row pointers
    /// there are 32-bit); such a circuit evaluates on the host.
    #[error(
        "a PCE matrix of {entries} entries cannot be evaluated on the device (at most 2^32 - 1)"
    )]
    PceTooLarge {
        /// The matrix's entry count.
        entries: usize,
    },

    /// A witness prepared for evaluation on the device was given to a proof whose
    /// parameters are streamed (device evaluation needs them resident).
    #[error(
        "the witness was prepared for evaluation on the device, which needs resident parameters"
    )]
    NotResident,

    /// Device-resident parameters were used with a prover on another device.
    #[error("parameters are resident on device {params}, the prover runs on device {prover}")]
    WrongDevice {
        /// Ordinal of the device holding the parameters.
        params: usize,
        /// Ordinal of the prover's device.
        prover: usize,
    },
}

impl Error {
    /// A size that differs from what the parameters were made for (the reference's
    /// [`cuzk_groth16::Error::ShapeMismatch`]).
    pub(crate) fn shape(what: &'static str, expected: usize, found: usize) -> Error {
        Error::Groth16(cuzk_groth16::Error::ShapeMismatch {
            what,
            expected,
            found,
        })
    }

    /// The reference's error inside, if this is one (through batches).
    pub fn groth16(&self) -> Option<&cuzk_groth16::Error> {
        match self {
            Error::Groth16(e) => Some(e),
            Error::InBatch { source, .. } => source.groth16(),
            _ => None,
        }
    }
}

// The GPU crates' errors are boxed, so that results stay small on every path.
impl From<cuzk_cuda::CudaError> for Error {
    fn from(e: cuzk_cuda::CudaError) -> Self {
        Error::Cuda(Box::new(e))
    }
}

impl From<cuzk_ntt::NttError> for Error {
    fn from(e: cuzk_ntt::NttError) -> Self {
        Error::Ntt(Box::new(e))
    }
}

impl From<cuzk_msm::MsmError> for Error {
    fn from(e: cuzk_msm::MsmError) -> Self {
        Error::Msm(Box::new(e))
    }
}

impl From<cuzk_mem::MemError> for Error {
    fn from(e: cuzk_mem::MemError) -> Self {
        Error::Budget(Box::new(e))
    }
}

impl From<cuzk_synth::SynthError> for Error {
    fn from(e: cuzk_synth::SynthError) -> Self {
        Error::Groth16(cuzk_groth16::Error::Synthesis(e))
    }
}

/// Milliseconds, for log fields.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
