//! The scheduler's typed errors: refusals at submission, failures of a job, control calls
//! on unknown jobs, and bad start-up configuration.

use crate::{BackendError, InputError, JobId, JobState, Lane, SetupError};
use cuzk_mem::MemError;
use cuzk_synth::SynthError;
use std::fmt;
use std::time::Duration;

/// Why a request was not accepted. Nothing was queued.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    /// No circuit kind named `kind` is registered; `known` lists those that are.
    #[error("unknown circuit kind {kind:?} (registered: {})", known.join(", "))]
    UnknownKind {
        /// The name asked for.
        kind: String,
        /// The registered names.
        known: Vec<String>,
    },

    /// Kind `kind` rejected the request's inputs.
    #[error("invalid inputs for {kind}: {source}")]
    InvalidInput {
        /// The kind.
        kind: String,
        /// What is wrong, naming the offending field or value.
        #[source]
        source: InputError,
    },

    /// One partition of circuit `circuit_key` needs `needed` bytes of host memory, more
    /// than the whole budget's `capacity`: it could never start.
    #[error(
        "one partition of {circuit_key} needs {needed} bytes of host memory, more than the {capacity} the budget can give it (its capacity less what other circuits' cached setups hold: evict one or raise the budget)"
    )]
    TooLarge {
        /// The circuit.
        circuit_key: String,
        /// Estimated bytes per partition.
        needed: u64,
        /// The budget's capacity less the bytes other circuits' cached setups hold.
        capacity: u64,
    },

    /// `limit` jobs are already waiting or running.
    #[error("the queue is full: {limit} jobs are waiting or running")]
    QueueFull {
        /// The configured `max_queued_jobs`.
        limit: usize,
    },

    /// The scheduler is shutting down and accepts no more work.
    #[error("the scheduler is shutting down")]
    ShuttingDown,
}

/// The stage of a job where something went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Recording the circuit's PCE or making its parameters.
    Setup,
    /// Witness synthesis.
    Synthesis,
    /// The backend's preparation ahead of a lane.
    Prepare,
    /// Proving.
    Prove,
    /// Self-verification.
    Verify,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Setup => "setup",
            Phase::Synthesis => "synthesis",
            Phase::Prepare => "prepare",
            Phase::Prove => "prove",
            Phase::Verify => "verify",
        })
    }
}

/// Why an accepted job did not produce its proofs. Only that job is affected.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Job `job` was cancelled.
    #[error("{job} was cancelled")]
    Cancelled {
        /// The job.
        job: JobId,
    },

    /// Job `job` was not done `timeout` after submission, its deadline.
    #[error("{job} missed its deadline, {timeout:?} after submission")]
    DeadlineExceeded {
        /// The job.
        job: JobId,
        /// Time from submission to the deadline.
        timeout: Duration,
    },

    /// The PCE or parameters of job `job`'s circuit could not be made.
    #[error("{job}: {source}")]
    Setup {
        /// The job.
        job: JobId,
        /// What failed, naming the circuit.
        #[source]
        source: SetupError,
    },

    /// Synthesizing partition `partition` of job `job` failed.
    #[error("{job}, partition {partition}: synthesis failed: {source}")]
    Synthesis {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// The synthesis error.
        #[source]
        source: SynthError,
    },

    /// The backend failed to prepare partition `partition` of job `job` for device
    /// `device`.
    #[error("{job}, partition {partition}: preparing for device {device} failed: {source}")]
    Prepare {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// The device (an index of the backend's lane layout).
        device: usize,
        /// The backend's error.
        #[source]
        source: BackendError,
    },

    /// The backend failed to prove partition `partition` of job `job` on lane `lane`.
    #[error("{job}, partition {partition}: proving on lane {lane} failed: {source}")]
    Prove {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// The lane.
        lane: Lane,
        /// The backend's error.
        #[source]
        source: BackendError,
    },

    /// Code run for partition `partition` of job `job` panicked in `phase` with `message`.
    #[error("{job}, partition {partition}: panic during {phase}: {message}")]
    Panicked {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// Where.
        phase: Phase,
        /// The panic's message.
        message: String,
    },

    /// The proof of partition `partition` of job `job`, made by backend `backend`, does not
    /// verify: it was withheld.
    #[error("{job}, partition {partition}: the proof made by backend {backend} does not verify")]
    VerificationFailed {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// The backend that made it.
        backend: String,
    },

    /// The verifier rejected partition `partition` of job `job` before checking (e.g. the
    /// circuit's public inputs do not fit its verifying key).
    #[error("{job}, partition {partition}: verifier error: {source}")]
    Verifier {
        /// The job.
        job: JobId,
        /// The partition.
        partition: usize,
        /// The verifier's error (boxed: it is large).
        #[source]
        source: Box<cuzk_groth16::Error>,
    },

    /// Memory for job `job` could not be reserved.
    #[error("{job}: {source}")]
    Memory {
        /// The job.
        job: JobId,
        /// The budget's error.
        #[source]
        source: MemError,
    },

    /// Worker `worker` of job `job` is gone, so its work could not be handed over.
    #[error("{job}: worker {worker} is gone")]
    WorkerGone {
        /// The job.
        job: JobId,
        /// The worker's thread name.
        worker: String,
    },

    /// Making job `job`'s proof from its partitions' proofs ([`crate::Instance::finish`])
    /// failed or panicked with `message`.
    #[error("{job}: making the proof from its partition proofs failed: {message}")]
    Finish {
        /// The job.
        job: JobId,
        /// What went wrong.
        message: String,
    },

    /// The scheduler shut down before job `job` finished.
    #[error("{job} was stopped by shutdown")]
    ShutDown {
        /// The job.
        job: JobId,
    },
}

impl JobError {
    /// The job that failed.
    pub fn job(&self) -> JobId {
        match self {
            JobError::Cancelled { job }
            | JobError::DeadlineExceeded { job, .. }
            | JobError::Setup { job, .. }
            | JobError::Synthesis { job, .. }
            | JobError::Prepare { job, .. }
            | JobError::Prove { job, .. }
            | JobError::Panicked { job, .. }
            | JobError::VerificationFailed { job, .. }
            | JobError::Verifier { job, .. }
            | JobError::Memory { job, .. }
            | JobError::WorkerGone { job, .. }
            | JobError::Finish { job, .. }
            | JobError::ShutDown { job } => *job,
        }
    }

    /// The missing file, when the job failed because its circuit's setup lacks one
    /// ([`SetupError::MissingFile`], e.g. a Filecoin parameter file not fetched): the host's
    /// precondition, not the request's fault (the daemon's `FAILED_PRECONDITION`).
    pub fn missing_file(&self) -> Option<&std::path::Path> {
        match self {
            JobError::Setup { source, .. } => source.missing_file(),
            _ => None,
        }
    }

    /// The state a job ends in after this error.
    pub fn state(&self) -> JobState {
        match self {
            JobError::Cancelled { .. } => JobState::Cancelled,
            _ => JobState::Failed,
        }
    }
}

/// Why [`crate::Scheduler::prove_blocking`] produced no proofs.
#[derive(Debug, thiserror::Error)]
pub enum ProveError {
    /// The request was refused; nothing was queued.
    #[error(transparent)]
    Submit(#[from] SubmitError),

    /// The job was accepted and failed.
    #[error(transparent)]
    Job(#[from] JobError),
}

/// Why a status or cancel call could not act.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ControlError {
    /// No job `job` is known (never submitted, or finished long enough ago to be
    /// forgotten).
    #[error("no {job} is known")]
    UnknownJob {
        /// The job.
        job: JobId,
    },

    /// Job `job` already finished, in state `state`.
    #[error("{job} already finished ({state:?})")]
    AlreadyFinished {
        /// The job.
        job: JobId,
        /// How it finished.
        state: JobState,
    },
}

/// Why parameters could not be preloaded.
#[derive(Debug, thiserror::Error)]
pub enum PreloadError {
    /// The circuit kind or its inputs were refused.
    #[error(transparent)]
    Submit(#[from] SubmitError),

    /// No registered kind knows circuit key `circuit_key`, so it cannot be set up from the
    /// key alone.
    #[error("no registered circuit kind makes circuit {circuit_key:?} from its key alone")]
    UnknownKey {
        /// The key asked for.
        circuit_key: String,
    },

    /// `id` names none of the circuits a caller may preload by id alone
    /// ([`crate::Scheduler::preload_named`]): not a kind's public id (`public`), not a trusted
    /// circuit (`trusted`, set up by the operator's configuration), not a circuit already set
    /// up (`cached`).
    #[error(
        "circuit id {id:?} cannot be preloaded: not a public circuit id ({}), not a trusted \
         circuit ({}), not a circuit already set up ({})",
        list(public),
        list(trusted),
        list(cached)
    )]
    NotPreloadable {
        /// The id asked for.
        id: String,
        /// The kinds' public ids ([`crate::CircuitKind::preload_ids`]).
        public: Vec<String>,
        /// The keys of trusted circuits ([`crate::Registry::trust_for_preload`]).
        trusted: Vec<String>,
        /// The keys of cached setups.
        cached: Vec<String>,
    },

    /// Setting circuit `circuit_key` up needs about `needed` bytes of host memory, which
    /// the memory budget cannot grant now (`source` names the budget).
    #[error("setting up {circuit_key} needs about {needed} bytes of host memory: {source}")]
    Memory {
        /// The circuit.
        circuit_key: String,
        /// The estimate reserved ([`crate::Shape::setup_bytes`]).
        needed: u64,
        /// The budget's refusal.
        #[source]
        source: MemError,
    },

    /// The circuit's PCE or parameters could not be made.
    #[error(transparent)]
    Setup(#[from] SetupError),

    /// The backend could not place the parameters on its devices.
    #[error("placing the parameters of {circuit_key} on the devices failed: {source}")]
    Load {
        /// The circuit.
        circuit_key: String,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
}

/// A list for messages: `a, b`, or `none`.
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// Why a scheduler could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The backend `backend` reports no lanes (`layout`).
    #[error("backend {backend} has no lanes ({layout})")]
    NoLanes {
        /// The backend's name.
        backend: String,
        /// Its lanes.
        layout: crate::LaneLayout,
    },

    /// Configuration field `field` has value `value`, which is invalid: `reason`.
    #[error("invalid scheduler setting {field} = {value}: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why it is invalid.
        reason: &'static str,
    },

    /// Thread `thread` could not be started.
    #[error("cannot start thread {thread}: {source}")]
    Spawn {
        /// The thread's name.
        thread: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}
