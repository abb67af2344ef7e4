//! The error type of every fallible call in this crate, naming the operation or kernel that failed.

use std::fmt;
use std::path::PathBuf;

/// Shorthand for results of this crate.
pub type Result<T, E = CudaError> = std::result::Result<T, E>;

/// A failed CUDA driver call: the driver's numeric code, its name and its description.
///
/// Kept as plain data (not the binding's own type) so that callers depend on this crate alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    code: u32,
    name: String,
    description: String,
}

/// `CUDA_ERROR_OUT_OF_MEMORY` in the driver API.
const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

impl DriverError {
    /// The driver's `CUresult` value.
    pub fn code(&self) -> u32 {
        self.code
    }

    /// The driver's name for the code, such as `CUDA_ERROR_OUT_OF_MEMORY`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the device ran out of memory: memory planners fall back to smaller chunks on it.
    pub fn is_out_of_memory(&self) -> bool {
        self.code == CUDA_ERROR_OUT_OF_MEMORY
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code, self.description)
    }
}

impl std::error::Error for DriverError {}

impl From<cudarc::driver::DriverError> for DriverError {
    fn from(e: cudarc::driver::DriverError) -> Self {
        // The strings are looked up now: the driver library is loaded, since a call just failed.
        let text = |r: std::result::Result<&std::ffi::CStr, _>| {
            r.map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "unknown".into())
        };
        DriverError {
            code: e.0 as u32,
            name: text(e.error_name()),
            description: text(e.error_string()),
        }
    }
}

/// Everything that can go wrong between cuzk and the GPU.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaError {
    /// The CUDA driver library (libcuda) could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda could not be loaded on this machine")]
    NoDriver,
    /// The requested device ordinal does not exist.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver sees.
        count: usize,
    },
    /// A driver call that is not a kernel launch failed.
    #[error("CUDA {op} failed: {source}")]
    Driver {
        /// The operation, such as `"memory allocation"` or `"stream synchronize"`.
        op: &'static str,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// The kernel image was found nowhere.
    #[error(
        "kernel image {file} not found (looked in {searched:?}); run `cargo xtask build-kernels`, \
         or set CUZK_KERNEL_DIR to the folder holding it"
    )]
    KernelImageNotFound {
        /// The file name looked for.
        file: &'static str,
        /// The folders searched, in order.
        searched: Vec<PathBuf>,
    },
    /// The kernel image exists but could not be read.
    #[error("cannot read kernel image {path}: {source}")]
    KernelImageRead {
        /// The image's path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The driver refused the kernel image (corrupt, or no code for this GPU's architecture).
    #[error("cannot load kernel image {path} on {device}: {source}; rebuild it with `cargo xtask build-kernels`")]
    KernelImageLoad {
        /// The image's path.
        path: PathBuf,
        /// The device's name and compute capability.
        device: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// The kernel image has no kernel of this name.
    #[error("kernel {kernel} not found in the kernel image: {source}")]
    KernelNotFound {
        /// The kernel's name.
        kernel: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// A kernel launch failed.
    #[error("launch of kernel {kernel} failed: {source}")]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// The driver's error.
        #[source]
        source: DriverError,
    },
    /// Two buffers that must have the same length do not.
    #[error("{what}: length {got} does not match {expected}")]
    LengthMismatch {
        /// Which argument.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// An index of a sparse operand points outside what it indexes (the kernels would read
    /// out of bounds), so it was refused before upload.
    #[error("{what} {index} is {value}, outside 0..{bound}")]
    IndexOutOfRange {
        /// Which index, such as `"column of entry"`.
        what: &'static str,
        /// Its position.
        index: usize,
        /// Its value.
        value: u64,
        /// The exclusive bound it must stay below.
        bound: u64,
    },
    /// A page-locked buffer of `capacity` bytes was asked to hold `requested` bytes.
    #[error("pinned buffer of {capacity} bytes cannot hold {requested} bytes")]
    PinnedTooSmall {
        /// Bytes asked for (`usize::MAX` when the size overflowed).
        requested: usize,
        /// Bytes the allocation has.
        capacity: usize,
    },
    /// A device buffer was used on a stream of another device.
    #[error("{what} lives on device {buffer_device} but the stream is on device {stream_device}")]
    WrongDevice {
        /// Which argument.
        what: &'static str,
        /// The buffer's device ordinal.
        buffer_device: usize,
        /// The stream's device ordinal.
        stream_device: usize,
    },
}

impl CudaError {
    /// Wraps a driver error from a call that is not a launch.
    pub(crate) fn driver(op: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Self {
        move |e| CudaError::Driver {
            op,
            source: e.into(),
        }
    }

    /// Whether this is the device running out of memory.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            CudaError::Driver { source, .. } | CudaError::Launch { source, .. } => {
                source.is_out_of_memory()
            }
            _ => false,
        }
    }
}
