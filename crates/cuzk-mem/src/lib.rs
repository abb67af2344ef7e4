//! Memory budgets for cuzk: what may be allocated, decided before it is allocated.
//!
//! A [`Budget`] is a capacity in bytes shared by everyone who clones it. Work that will
//! allocate asks for a [`Reservation`] first and holds it for as long as the memory is in
//! use; dropping the guard (normally, or while unwinding from a panic) gives the bytes
//! back. So the sum of live reservations never exceeds the capacity, and a workload that
//! would not fit becomes a slower one, not an out-of-memory kill.
//!
//! - [`Budget::try_reserve`] answers at once; [`Budget::reserve_blocking`] waits (with an
//!   optional timeout) for releases. A request larger than the whole capacity is refused
//!   at once by both, with [`MemError::ExceedsCapacity`]: it could never be granted.
//!   [`Budget::try_reserve_up_to`] takes whatever is free between two bounds (an MSM's
//!   allowance).
//! - [`Budget::on_release`] registers a callback run after every release, so an event loop
//!   (the scheduler's dispatcher) can retry its own `try_reserve` in its own order instead
//!   of parking a thread per waiter.
//! - [`Plan`] and [`Budget::fits`] say whether a set of allocations fits now, later, or
//!   never. For the fallback from a layout that does not fit to a smaller one, a prover
//!   lists its layouts from most to least preferred (all resident, fewer resident buffers,
//!   ever smaller chunks): [`Budget::choose`] names the first that fits the capacity,
//!   [`Budget::try_reserve_first`] and [`Budget::reserve_first_blocking`] reserve the first
//!   that fits what is free, and [`MemError::NoPlanFits`] says when none ever will.
//! - [`HostBudget`] derives the host's capacity from `/proc/meminfo` (`MemAvailable`, else
//!   `MemTotal`, minus a margin) unless a fixed size overrides it; [`VramPolicy`] does the
//!   same for a device (free or total memory minus [`DEFAULT_VRAM_MARGIN`], or a fixed
//!   figure); [`parse_size`] reads sizes such as `64GiB` from configuration.
//!
//! All of that needs no CUDA. With the `cuda` feature (off by default, so the scheduler
//! links no GPU code) come the GPU halves:
//!
//! - `PinnedPool`: page-locked host buffers per device, lent as `PooledPinned` and
//!   returned on drop, not freed, so proofs neither pin nor free on the hot path; charged
//!   to a host budget; statistics and trimming.
//! - `VramBudget`: a device's budget sized from the driver, shared by every worker on the
//!   card; `DriverSampler` checks its high-water mark against the driver's own figures.
#![forbid(unsafe_code)]

mod budget;
mod error;
mod host;
#[cfg(feature = "cuda")]
mod pinned;
mod plan;
// The shelf serves the pinned pool; without `cuda` only its size classes, statistics and
// CPU tests use it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod pool;
mod size;
mod vram;
#[cfg(feature = "cuda")]
mod vram_gpu;

pub use budget::{Budget, ReleaseListener, Reservation};
pub use error::MemError;
pub use host::{default_margin, HostBudget, MemInfo};
#[cfg(feature = "cuda")]
pub use pinned::{PinnedPool, PooledPinned};
pub use plan::{Fit, Plan};
pub use pool::{size_class, PoolStats, MIN_CLASS};
pub use size::{parse_size, Bytes};
pub use vram::{VramPolicy, DEFAULT_VRAM_MARGIN};
#[cfg(feature = "cuda")]
pub use vram_gpu::{DriverMemory, DriverReport, DriverSampler, VramBudget};
