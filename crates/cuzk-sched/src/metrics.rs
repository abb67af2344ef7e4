//! A point-in-time view of the scheduler: job counts, work in flight, memory, and how busy
//! each lane and the synthesis pool have been.

use crate::{DeviceStats, JobId, Lane, MemoryStats};
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
    /// Host bytes of the memory budget those setups hold (counted until they are evicted).
    pub setup_bytes: u64,
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
