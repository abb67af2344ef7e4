//! One accepted job as the scheduler tracks it, and what it reports when asked or done.

use crate::{
    Instance, JobError, JobId, JobOutput, JobState, JobStatus, JobTimings, Lane, PartitionTimings,
    Priority, Setup,
};
use cuzk_field::Scalar;
use cuzk_groth16::Proof;
use std::cmp::Reverse;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// The order jobs start in: higher priority first, then lower sequence number (older).
pub(crate) type Order = (Reverse<Priority>, u64);

/// Where a job's result goes.
pub(crate) type Reply = oneshot::Sender<Result<JobOutput, JobError>>;

/// A partition's timings as they accumulate.
#[derive(Clone, Debug, Default)]
pub(crate) struct PartTimes {
    pub synthesis: Duration,
    pub prepare: Duration,
    pub ready_at: Option<Instant>,
    pub lane_wait: Duration,
    pub lane: Option<Lane>,
    pub prove: Duration,
    pub verify: Duration,
}

/// An accepted, unfinished job.
pub(crate) struct Job {
    pub id: JobId,
    pub seq: u64,
    pub priority: Priority,
    pub kind: String,
    pub circuit_key: String,
    pub instance: Arc<dyn Instance>,
    pub partitions: usize,
    /// The device every partition of the job goes to, chosen when its first starts.
    pub device: Option<usize>,
    /// Partitions whose work has begun (memory reserved, sent to synthesis).
    pub started: usize,
    pub proved: usize,
    pub proofs: Vec<Option<Proof>>,
    /// The proof [`Instance::finish`] made from `proofs`, for kinds that make one.
    pub finished: Option<Vec<u8>>,
    pub public_inputs: Vec<Vec<Scalar>>,
    pub times: Vec<PartTimes>,
    pub setup: Duration,
    /// The circuit's setup, once a partition has been synthesized with it (the verifying
    /// key its proofs are returned with, even if the cache has moved on since).
    pub setup_used: Option<Arc<Setup>>,
    /// Host memory reserved per partition.
    pub partition_bytes: u64,
    /// Bytes of a partition's witness (its variables), of `partition_bytes`: the most a spare
    /// witness reused for it may hold.
    pub witness_bytes: u64,
    pub submitted: Instant,
    pub deadline: Option<Instant>,
    pub first_start: Option<Instant>,
    pub reply: Option<Reply>,
    /// Set when the job finishes, so that workers skip what is left of its work.
    pub cancelled: Arc<AtomicBool>,
    pub span: tracing::Span,
}

impl Job {
    pub fn order(&self) -> Order {
        (Reverse(self.priority), self.seq)
    }

    pub fn status(&self, now: Instant) -> JobStatus {
        JobStatus {
            id: self.id,
            kind: self.kind.clone(),
            priority: self.priority,
            state: if self.started == 0 {
                JobState::Queued
            } else {
                JobState::Running
            },
            partitions: self.partitions,
            partitions_started: self.started,
            partitions_proved: self.proved,
            device: self.device,
            age: now - self.submitted,
            error: None,
        }
    }

    /// The result of a job whose every partition is proved.
    pub fn output(&mut self, total: Duration, verified: bool) -> JobOutput {
        let partitions: Vec<PartitionTimings> = self
            .times
            .iter()
            .enumerate()
            .map(|(partition, t)| PartitionTimings {
                partition,
                lane: t.lane.unwrap_or(Lane {
                    device: 0,
                    worker: 0,
                }),
                memory_bytes: self.partition_bytes,
                synthesis: t.synthesis,
                prepare: t.prepare,
                lane_wait: t.lane_wait,
                prove: t.prove,
                verify: t.verify,
            })
            .collect();
        let sum = |f: fn(&PartitionTimings) -> Duration| partitions.iter().map(f).sum();
        let timings = JobTimings {
            queue_wait: self
                .first_start
                .map_or(Duration::ZERO, |t| t - self.submitted),
            setup: self.setup,
            synthesis: sum(|p| p.synthesis),
            prepare: sum(|p| p.prepare),
            prove: sum(|p| p.prove),
            verify: sum(|p| p.verify),
            total,
            partitions,
        };
        // Called once `proved == partitions`, and each partition is proved once.
        let proofs: Vec<Proof> = self.proofs.iter().flatten().copied().collect();
        debug_assert_eq!(proofs.len(), self.partitions);
        JobOutput {
            id: self.id,
            kind: self.kind.clone(),
            circuit_key: self.circuit_key.clone(),
            verifying_key: self
                .setup_used
                .as_ref()
                .expect("a job with proofs was synthesized")
                .vk
                .clone(),
            proofs,
            finished: self.finished.take(),
            public_inputs: std::mem::take(&mut self.public_inputs),
            verified,
            timings,
        }
    }
}
