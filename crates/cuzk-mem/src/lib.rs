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
//! - [`Budget::on_release`] registers a callback run after every release, so an event loop
//!   (the scheduler's dispatcher) can retry its own `try_reserve` in its own order instead
//!   of parking a thread per waiter.
//! - [`Plan`] and [`Budget::fits`] say whether a set of allocations fits now, later, or
//!   never.
//! - [`HostBudget`] derives the host's capacity from `/proc/meminfo` (`MemAvailable`, else
//!   `MemTotal`, minus a margin) unless a fixed size overrides it; [`parse_size`] reads
//!   sizes such as `64GiB` from configuration.
//!
//! This crate needs no CUDA. The pinned host buffers and the per-device VRAM budget will be
//! added behind a `cuda` feature; the accounting here is what they will build on.
#![forbid(unsafe_code)]

mod budget;
mod error;
mod host;
mod plan;
mod size;

pub use budget::{Budget, ReleaseListener, Reservation};
pub use error::MemError;
pub use host::{default_margin, HostBudget, MemInfo};
pub use plan::{Fit, Plan};
pub use size::{parse_size, Bytes};
