//! The typed errors of budgets, reservations, meminfo and size parsing.

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

    /// `requested` bytes cannot be split off a reservation that holds only `held`.
    #[error("cannot split {requested} bytes off a reservation of {held} bytes")]
    SplitTooLarge {
        /// Bytes asked to split off.
        requested: u64,
        /// Bytes the reservation holds.
        held: u64,
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
