//! The crate's error type: every variant names the value that was refused.

/// Why a transform could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NttError {
    /// Transform lengths must be powers of two.
    #[error("length {len} is not a power of two")]
    NotPowerOfTwo {
        /// The length that was given.
        len: usize,
    },
    /// The length is below the smallest size this engine transforms.
    #[error("size 2^{log_n} is below the smallest supported size 2^{min}")]
    TooSmall {
        /// log2 of the length that was given.
        log_n: u32,
        /// The smallest supported log2 length.
        min: u32,
    },
    /// The length is above the largest size this engine transforms.
    #[error("size 2^{log_n} is above the largest supported size 2^{max}")]
    TooLarge {
        /// log2 of the length that was given.
        log_n: u32,
        /// The largest supported log2 length.
        max: u32,
    },
    /// Vectors transformed together, or a vector and its plan, must have one length.
    #[error("vector {index} has length {got}, expected {expected}")]
    LengthMismatch {
        /// Position of the offending vector in the call.
        index: usize,
        /// The length every vector must have.
        expected: usize,
        /// The length it has.
        got: usize,
    },
    /// The pass block size asked for is not one the kernels support.
    #[error("block size 2^{block_log} elements is outside 2^{min}..=2^{max}")]
    BlockSize {
        /// log2 of the elements per block that was asked for.
        block_log: u32,
        /// The smallest supported value.
        min: u32,
        /// The largest supported value.
        max: u32,
    },
    /// The elements per thread asked for are not a shape the pass kernels come in.
    #[error("2^{elems_log} elements a thread asked for; the pass kernels hold 2^{min} or 2^{max}")]
    ElemsPerThread {
        /// log2 of the elements per thread that was asked for.
        elems_log: u32,
        /// The smaller supported value.
        min: u32,
        /// The larger supported value.
        max: u32,
    },
    /// The bound asked for on directly tabulated pass factors is past the largest transform.
    #[error("direct pass-factor tables up to order 2^{log} asked for; at most 2^{max}")]
    DirectFactorLog {
        /// log2 of the largest order asked for.
        log: u32,
        /// The largest supported value.
        max: u32,
    },
    /// A call was given no vectors to transform.
    #[error("no vectors were given")]
    EmptyBatch,
    /// Device memory is too short for the tables or scratch a transform needs.
    #[error("out of device memory: {needed} bytes needed for {what}, {free} bytes free")]
    OutOfDeviceMemory {
        /// What the memory was for.
        what: &'static str,
        /// Bytes the allocation needed.
        needed: usize,
        /// Bytes the device reported free.
        free: usize,
    },
    /// The CUDA runtime failed (kernel image, launch, copy or allocation).
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] cuzk_cuda::CudaError),
}
