//! A point-in-time view of the scheduler: job counts, work in flight, memory, and how busy
//! each lane and the synthesis pool have been.

use crate::{JobId, Lane};
use std::time::Duration;

/// Everything [`crate::Scheduler::metrics`] reports.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSnapshot {
    /// The backend's name.
    pub backend: String,
    /// Time since the scheduler started.
    pub uptime: Duration,
    /// Jobs by outcome.
    pub jobs: JobCounts,
    /// Partitions in flight.
    pub partitions: PartitionCounts,
    /// The host budget.
    pub memory: MemoryStats,
    /// One entry per lane, device-major.
    pub lanes: Vec<LaneStats>,
    /// The synthesis pool.
    pub synthesis: SynthesisStats,
    /// Circuits whose PCE and parameters are cached.
    pub setups_cached: usize,
    /// The backend's devices (none for the CPU backend).
    pub devices: Vec<DeviceStats>,
}

/// Jobs by outcome since start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobCounts {
    /// Accepted.
    pub submitted: u64,
    /// Refused for lack of room (queue full, larger than the budget).
    pub refused: u64,
    /// Refused as malformed (unknown kind, bad inputs).
    pub invalid: u64,
    /// Finished with proofs.
    pub succeeded: u64,
    /// Finished with an error (deadlines and shutdown included).
    pub failed: u64,
    /// Cancelled.
    pub cancelled: u64,
    /// Accepted, no partition started yet.
    pub queued: usize,
    /// At least one partition started, not finished.
    pub running: usize,
}

/// Partitions in flight now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionCounts {
    /// Being synthesized.
    pub synthesizing: usize,
    /// Synthesized, waiting for a lane.
    pub ready: usize,
    /// On a lane.
    pub proving: usize,
}

/// The host memory budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Its name.
    pub budget: String,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes reserved now.
    pub used: u64,
    /// Most bytes reserved at once so far.
    pub high_water: u64,
}

/// One lane's record.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneStats {
    /// The lane.
    pub lane: Lane,
    /// Whether it is proving now.
    pub busy: bool,
    /// The job it is proving now.
    pub job: Option<JobId>,
    /// Time spent proving and verifying so far.
    pub busy_time: Duration,
    /// Proofs made.
    pub proofs: u64,
    /// Partitions that failed on it.
    pub failures: u64,
    /// `busy_time` over uptime, in 0..=1.
    pub utilization: f64,
}

/// The synthesis pool's record.
#[derive(Clone, Debug, PartialEq)]
pub struct SynthesisStats {
    /// Worker threads.
    pub workers: usize,
    /// Workers synthesizing now.
    pub busy: usize,
    /// Time spent in setup and synthesis so far, all workers together.
    pub busy_time: Duration,
    /// Partitions synthesized (successfully or not).
    pub partitions: u64,
    /// `busy_time` over uptime × workers, in 0..=1.
    pub utilization: f64,
}

/// One device of a backend: what it proved, how busy its GPU was, its VRAM budget and the
/// parameters placed on it. Times are sums since start, so rates come from differences of
/// two snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceStats {
    /// The device's index in the backend's lane layout (`d<index>` in lane names).
    pub index: usize,
    /// The driver's ordinal of the device.
    pub ordinal: usize,
    /// What the device is, e.g. `NVIDIA H200`.
    pub name: String,
    /// Proofs made on it.
    pub proofs: u64,
    /// Proofs that failed on it.
    pub failures: u64,
    /// Kernel time of its proofs, summed (two lanes computing at once both count, so this
    /// can grow faster than wall time).
    pub busy: Duration,
    /// Wall time during which at least one proof was on the device.
    pub occupied: Duration,
    /// CPU time preparing partitions for it ahead of its lanes, summed.
    pub prepare: Duration,
    /// Time per proof phase (`ntt`, `msm_h`, …), summed over its proofs.
    pub phases: Vec<(String, Duration)>,
    /// Its VRAM budget.
    pub memory: Option<MemoryStats>,
    /// Its pinned host pool (`used`: bytes pinned now, idle and lent).
    pub pinned: Option<MemoryStats>,
    /// Device memory the driver reports free now.
    pub driver_free: u64,
    /// Device memory in all.
    pub driver_total: u64,
    /// Parameters placed on the device.
    pub parameters: Vec<DeviceParameterStats>,
}

/// One circuit's parameters on a device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceParameterStats {
    /// The circuit.
    pub circuit_key: String,
    /// Device bytes they hold (0 when streamed).
    pub bytes: u64,
    /// Uploaded and kept on the device (rather than streamed from the host per proof).
    pub resident: bool,
    /// Kept from idle eviction (preloaded).
    pub pinned: bool,
    /// Partitions prepared or proving with them now.
    pub in_use: usize,
    /// Time since a proof last used them.
    pub idle: Duration,
}
