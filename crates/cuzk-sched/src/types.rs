//! The data of the API: requests, job ids and priorities, results, timings and statuses.

use crate::{Inputs, Lane};
use cuzk_field::Scalar;
use cuzk_groth16::{Proof, VerifyingKey};
use std::fmt;
use std::time::{Duration, Instant};

/// A job's identifier, unique within one scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(pub u64);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "job {}", self.0)
    }
}

/// How urgent a job is. Higher priorities start first; within one priority, the oldest
/// job starts (and so finishes) first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// Background work.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Ahead of normal work.
    High,
    /// Ahead of everything (e.g. a proof whose on-chain window is closing).
    Critical,
}

impl Priority {
    /// Every priority, lowest first.
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// The lower-case name: `low`, `normal`, `high`, `critical`.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A proving request: which circuit kind, its inputs, how urgent, and until when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The registered kind's name, e.g. `sha256`.
    pub kind: String,
    /// The inputs the kind parses.
    pub inputs: Inputs,
    /// Priority.
    pub priority: Priority,
    /// When the job must be done by; past it the job fails with
    /// [`crate::JobError::DeadlineExceeded`], whatever stage it is in.
    pub deadline: Option<Instant>,
}

impl Request {
    /// A request of kind `kind` with normal priority and no deadline.
    pub fn new(kind: impl Into<String>, inputs: Inputs) -> Request {
        Request {
            kind: kind.into(),
            inputs,
            priority: Priority::Normal,
            deadline: None,
        }
    }

    /// A `sha256` request: prove knowledge of `preimage`.
    pub fn sha256(preimage: impl Into<Vec<u8>>) -> Request {
        Request::new(crate::Sha256Kind::NAME, Inputs::from_bytes(preimage))
    }

    /// A `synthetic-porep` request: `partitions` partitions of 2^`log2_constraints`
    /// constraints, values from `seed` (partition i uses `seed + i`).
    pub fn synthetic_porep(log2_constraints: u32, seed: u64, partitions: usize) -> Request {
        let inputs = Inputs::default()
            .with_field("log2_constraints", log2_constraints.into())
            .with_field("seed", seed)
            .with_field("partitions", partitions as u64);
        Request::new(crate::SyntheticPoRepKind::NAME, inputs)
    }

    /// This request with priority `priority`.
    pub fn with_priority(mut self, priority: Priority) -> Request {
        self.priority = priority;
        self
    }

    /// This request with a deadline `timeout` from now.
    pub fn with_timeout(mut self, timeout: Duration) -> Request {
        self.deadline = Instant::now().checked_add(timeout);
        self
    }

    /// This request with deadline `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Request {
        self.deadline = Some(deadline);
        self
    }
}

/// A finished job's proofs.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// The job.
    pub id: JobId,
    /// Its kind.
    pub kind: String,
    /// The circuit (shape) it was proved for, the key of its parameters.
    pub circuit_key: String,
    /// The verifying key of the parameters the proofs were made with.
    pub verifying_key: VerifyingKey,
    /// One proof per partition, in partition order.
    pub proofs: Vec<Proof>,
    /// The job's proof made from `proofs` by its kind ([`crate::Instance::finish`], e.g. a
    /// NI-PoRep's SnarkPack aggregate); `None` for kinds whose proof is `proofs` itself.
    pub finished: Option<Vec<u8>>,
    /// Each partition's public inputs (ONE not included), in partition order.
    pub public_inputs: Vec<Vec<Scalar>>,
    /// Whether every proof was verified before it was returned.
    pub verified: bool,
    /// Where the time went.
    pub timings: JobTimings,
}

impl JobOutput {
    /// The job's proof: what its kind made from the partition proofs when it makes one
    /// ([`JobOutput::finished`]), else the proofs' 192-byte encodings concatenated in
    /// partition order (the form Filecoin uses for a multi-partition proof).
    pub fn proof_bytes(&self) -> Vec<u8> {
        match &self.finished {
            Some(bytes) => bytes.clone(),
            None => self.proofs.iter().flat_map(|p| p.to_bytes()).collect(),
        }
    }
}

/// Where a job's time went. Phase times are summed over partitions, which overlap when
/// lanes or synthesis workers run in parallel, so they can add up to more than `total`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobTimings {
    /// From submission until its first partition's memory was reserved and work began.
    pub queue_wait: Duration,
    /// Spent obtaining the circuit's PCE and parameters (zero when they were cached).
    pub setup: Duration,
    /// Witness synthesis, all partitions.
    pub synthesis: Duration,
    /// The backend's preparation ahead of a lane (for the CUDA backend: evaluating a, b, c
    /// into pinned memory), all partitions; zero for the CPU backend.
    pub prepare: Duration,
    /// Proving, all partitions.
    pub prove: Duration,
    /// Self-verification, all partitions.
    pub verify: Duration,
    /// From submission until the result was ready.
    pub total: Duration,
    /// Per partition, in partition order.
    pub partitions: Vec<PartitionTimings>,
}

/// Where one partition's time went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionTimings {
    /// The partition's index.
    pub partition: usize,
    /// The lane that proved it.
    pub lane: Lane,
    /// Host memory reserved for it.
    pub memory_bytes: u64,
    /// Witness synthesis (setup excluded).
    pub synthesis: Duration,
    /// The backend's preparation ahead of a lane.
    pub prepare: Duration,
    /// Waiting, once synthesized (and prepared), for a lane.
    pub lane_wait: Duration,
    /// Proving.
    pub prove: Duration,
    /// Self-verification.
    pub verify: Duration,
}

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Accepted; no partition started yet.
    Queued,
    /// At least one partition started.
    Running,
    /// Every proof made (and verified, unless verification is off).
    Succeeded,
    /// Failed (error, panic, missed deadline, shutdown).
    Failed,
    /// Cancelled by a caller.
    Cancelled,
}

impl JobState {
    /// Whether the job is over.
    pub fn is_finished(self) -> bool {
        !matches!(self, JobState::Queued | JobState::Running)
    }
}

/// A snapshot of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobStatus {
    /// The job.
    pub id: JobId,
    /// Its kind.
    pub kind: String,
    /// Its priority.
    pub priority: Priority,
    /// Its state.
    pub state: JobState,
    /// Partitions in the job.
    pub partitions: usize,
    /// Partitions whose work has begun.
    pub partitions_started: usize,
    /// Partitions proved.
    pub partitions_proved: usize,
    /// The device the job is pinned to (an index of the backend's lane layout), once its
    /// first partition has started.
    pub device: Option<usize>,
    /// Time since submission (until it finished, for a finished job).
    pub age: Duration,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
}
