//! The crate's error type: every variant names the value that was refused.

/// Why a multi-scalar multiplication could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MsmError {
    /// Bases and scalars must pair up one to one.
    #[error("{bases} bases but {scalars} scalars: an MSM needs one scalar per base")]
    LengthMismatch {
        /// Number of bases given.
        bases: usize,
        /// Number of scalars given.
        scalars: usize,
    },
    /// A range of a scalar buffer reaches past its end.
    #[error("scalar range {start}..{end} is outside the buffer of {len} scalars")]
    RangeOutOfBounds {
        /// First scalar of the range.
        start: usize,
        /// One past the last scalar of the range.
        end: usize,
        /// Scalars in the buffer.
        len: usize,
    },
    /// Point indices travel as 31-bit numbers through the device sort.
    #[error("{len} points exceed the largest supported MSM of {max} points")]
    TooLarge {
        /// Number of points asked for.
        len: usize,
        /// The largest supported number.
        max: usize,
    },
    /// Window widths outside the supported range.
    #[error("window width {bits} bits is outside the supported range {min}..={max}")]
    BadWindow {
        /// The width asked for.
        bits: u32,
        /// Smallest supported width.
        min: u32,
        /// Largest supported width.
        max: u32,
    },
    /// More batch-affine pair levels than the plan supports.
    #[error("{levels} batch-affine pair levels is more than the supported {max}")]
    BadAffineLevels {
        /// The number asked for.
        levels: u32,
        /// The largest supported number.
        max: u32,
    },
    /// The VRAM allowance cannot hold the buckets of one window and one chunk of one point.
    #[error(
        "VRAM allowance of {allowance} bytes is too small: one window and one point need at \
         least {needed} bytes"
    )]
    AllowanceTooSmall {
        /// The allowance given, in bytes.
        allowance: usize,
        /// The least that would do, in bytes.
        needed: usize,
    },
    /// A base uploaded to the device or read back from it is not a curve point.
    #[error("point {index} is not on the curve: {source}")]
    NotOnCurve {
        /// Position of the point (for results: the window).
        index: usize,
        /// What the check found.
        #[source]
        source: cuzk_field::ReprError,
    },
    /// The scalars live on another device than the bases.
    #[error("bases live on device {bases} but the scalars on device {scalars}")]
    WrongDevice {
        /// Device of the bases.
        bases: usize,
        /// Device of the scalars.
        scalars: usize,
    },
    /// A fixed-base table cannot be built for the identity: every entry would be the identity,
    /// which the affine kernels cannot add.
    #[error("the {group} fixed-base table's base point is the identity")]
    IdentityBase {
        /// The group (`g1` or `g2`).
        group: &'static str,
    },
    /// Points per thread of the fixed-base kernels outside the supported range.
    #[error("{per} points per thread is outside the supported range 1..={max}")]
    BadPointsPerThread {
        /// The number asked for.
        per: u32,
        /// The largest supported number.
        max: u32,
    },
    /// A fixed-base multiplication's output does not hold one point per scalar.
    #[error("{scalars} scalars but room for {out} points: fixed-base output needs one per scalar")]
    OutputLength {
        /// Number of scalars given.
        scalars: usize,
        /// Number of points the output holds.
        out: usize,
    },
    /// Shifted copies of the bases: at least one (the bases themselves), at most one per
    /// window of the table's width.
    #[error(
        "{copies} shifted copies of the bases is outside the supported range 1..={max} for \
             {bits}-bit windows"
    )]
    BadCopies {
        /// The number asked for.
        copies: u32,
        /// The table's window width.
        bits: u32,
        /// The largest useful number: the windows of that width.
        max: u32,
    },
    /// The bases' copies would index past the 31 bits a sorted entry carries.
    #[error("{copies} copies of {len} bases exceed the {max} points a table can index")]
    TableTooLarge {
        /// Copies asked for.
        copies: u32,
        /// Bases per copy.
        len: usize,
        /// Most points of a table.
        max: usize,
    },
    /// The CUDA runtime failed (kernel image, launch, copy or allocation).
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Cuda(#[from] cuzk_cuda::CudaError),
}
