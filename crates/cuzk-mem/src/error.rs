//! The typed errors of budgets, reservations, plans, pools, meminfo and size parsing.

use std::path::PathBuf;
use std::time::Duration;

/// Why memory could not be reserved, or a budget could not be sized.
#[derive(Debug, thiserror::Error)]
pub enum MemError {
    /// `requested` bytes is more than budget `budget`'s whole `capacity`: no amount of
    /// waiting would grant it, so it is refused at once.
    #[error(
        "budget {budget}: {requested} bytes requested, more than its whole capacity of {capacity} bytes"
    )]
    ExceedsCapacity {
        /// The budget's name.
        budget: String,
        /// Bytes asked for.
        requested: u64,
        /// The budget's capacity.
        capacity: u64,
    },

    /// Only `available` bytes of budget `budget` are free now, fewer than the `requested`.
    #[error(
        "budget {budget}: {requested} bytes requested, only {available} of {capacity} bytes free"
    )]
    Unavailable {
        /// The budget's name.
        budget: String,
        /// Bytes asked for.
        requested: u64,
        /// Bytes free when asked.
        available: u64,
        /// The budget's capacity.
        capacity: u64,
    },

    /// `requested` bytes of budget `budget` were not freed within `waited`.
    #[error("budget {budget}: {requested} bytes not granted within {waited:?}")]
    TimedOut {
        /// The budget's name.
        budget: String,
        /// Bytes asked for.
        requested: u64,
        /// How long the caller waited.
        waited: Duration,
    },

    /// None of the `plans` offered to budget `budget` fits its whole `capacity`; the
    /// smallest needs `smallest` bytes (`None`: no plan was offered).
    #[error(
        "budget {budget}: none of {plans} plan(s) fits its capacity of {capacity} bytes{}",
        smallest_text(*.smallest)
    )]
    NoPlanFits {
        /// The budget's name.
        budget: String,
        /// The budget's capacity.
        capacity: u64,
        /// How many plans were offered.
        plans: usize,
        /// Total of the smallest plan.
        smallest: Option<u64>,
    },

    /// `len` elements of `elem_bytes` bytes each is more bytes than a `u64` holds.
    #[error("{len} elements of {elem_bytes} bytes overflow a byte count")]
    SizeOverflow {
        /// Elements asked for.
        len: u64,
        /// Bytes per element.
        elem_bytes: u64,
    },

    /// `requested` bytes cannot be split off a reservation that holds only `held`.
    #[error("cannot split {requested} bytes off a reservation of {held} bytes")]
    SplitTooLarge {
        /// Bytes asked to split off.
        requested: u64,
        /// Bytes the reservation holds.
        held: u64,
    },

    /// A reservation of budget `other` cannot join one of budget `budget`.
    #[error("cannot merge a reservation of budget {other:?} into one of budget {budget:?}")]
    MergeAcrossBudgets {
        /// The budget of the reservation merged into.
        budget: String,
        /// The budget of the reservation offered.
        other: String,
    },

    /// The meminfo file at `path` could not be read.
    #[error("cannot read {}: {source}", path.display())]
    MemInfoIo {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The meminfo file at `path` lacks a field or holds one this crate cannot read.
    #[error("cannot parse {}: {what}", path.display())]
    MemInfoParse {
        /// The file.
        path: PathBuf,
        /// The missing or malformed field, with its text.
        what: String,
    },

    /// Automatic sizing found `base` bytes of host memory, no more than the `margin` kept
    /// free for the rest of the system, so it would leave the budget nothing.
    #[error("host memory: {base} bytes available, not more than the {margin}-byte margin")]
    NoHostMemory {
        /// `MemAvailable` (or `MemTotal`) in bytes.
        base: u64,
        /// The margin subtracted from it.
        margin: u64,
    },

    /// Device `device` reports `base` bytes (free or total, as the policy asks), no more than
    /// the `margin` kept back, so the VRAM budget would be empty.
    #[error("device {device}: {base} bytes of VRAM, not more than the {margin}-byte margin")]
    NoDeviceMemory {
        /// The device's ordinal.
        device: usize,
        /// Free (or total) device memory in bytes.
        base: u64,
        /// The margin subtracted from it.
        margin: u64,
    },

    /// A fixed VRAM budget of `fixed` bytes was configured for device `device`, which has
    /// only `total` bytes.
    #[error("device {device}: a fixed VRAM budget of {fixed} bytes exceeds its {total} bytes")]
    FixedExceedsDevice {
        /// The device's ordinal.
        device: usize,
        /// The configured budget.
        fixed: u64,
        /// The device's total memory.
        total: u64,
    },

    /// The CUDA operation `op` on device `device` failed.
    #[cfg(feature = "cuda")]
    #[error("device {device}: {op} failed: {source}")]
    Cuda {
        /// What was being done, such as `pinned allocation`.
        op: &'static str,
        /// The device's ordinal.
        device: usize,
        /// The runtime's error (boxed: it is large, and rare).
        #[source]
        source: Box<cuzk_cuda::CudaError>,
    },

    /// The driver-memory sampler of device `device` could not run: `reason`.
    #[cfg(feature = "cuda")]
    #[error("device {device}: VRAM sampler: {reason}")]
    SamplerThread {
        /// The device's ordinal.
        device: usize,
        /// What went wrong (thread spawn failure, panic, second stop).
        reason: String,
    },

    /// A fixed budget of zero bytes was configured; it would admit nothing.
    #[error("a budget of 0 bytes admits nothing")]
    ZeroCapacity,

    /// `input` is not a size this crate reads (bytes, or a number with a unit such as
    /// `512MiB`, `1.5 GB`, `64G`).
    #[error("invalid size {input:?}: {reason}")]
    BadSize {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

fn smallest_text(smallest: Option<u64>) -> String {
    match smallest {
        Some(bytes) => format!(" (the smallest needs {bytes} bytes)"),
        None => " (no plan was offered)".to_string(),
    }
}
