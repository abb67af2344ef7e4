//! The messages between the dispatcher and the worker threads.

use crate::{Instance, JobError, JobId, Prepared, Setup};
use cuzk_field::Scalar;
use cuzk_groth16::Proof;
use cuzk_mem::Reservation;
use cuzk_synth::Witness;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What wakes the dispatcher.
pub(crate) enum Event {
    /// Something changed elsewhere (a submission, a cancel, a release of memory).
    Wake,
    /// A synthesis worker finished a partition (boxed, as the proof below).
    Synthesized(Box<SynthDone>),
    /// A lane finished a partition (boxed: a proof is large, and events queue up).
    Proved(Box<ProveDone>),
    /// A finishing thread made a job's proof from its partitions' proofs.
    Finished(Box<FinishDone>),
}

/// What a lane proves: the witness, or what the backend prepared from it.
pub(crate) enum Work {
    Witness(Witness),
    Prepared(Prepared),
}

/// One partition to synthesize (and prepare) for the device its job is pinned to; its
/// memory is already reserved.
pub(crate) struct SynthTask {
    pub job: JobId,
    pub partition: usize,
    pub device: usize,
    pub instance: Arc<dyn Instance>,
    pub reservation: Reservation,
    /// An earlier witness whose memory the new one may take (its bytes are part of
    /// `reservation`).
    pub spare: Option<Witness>,
    pub cancelled: Arc<AtomicBool>,
    pub span: tracing::Span,
}

/// A witness no longer needed (its partition was prepared), kept for the next synthesis to
/// write into, with the part of its partition's reservation that its memory accounts for.
pub(crate) struct Spare {
    pub witness: Witness,
    pub reservation: Reservation,
}

/// A synthesized partition: what proving it needs.
pub(crate) struct Synthesized {
    pub setup: Arc<Setup>,
    pub work: Work,
    pub public_inputs: Vec<Scalar>,
    pub setup_time: Duration,
    pub synthesis: Duration,
    pub prepare: Duration,
}

/// A synthesis worker's report. The reservation comes back with it: the memory stays
/// held by the witness until the partition is proved.
pub(crate) struct SynthDone {
    pub worker: usize,
    pub job: JobId,
    pub partition: usize,
    pub device: usize,
    pub outcome: Result<Synthesized, JobError>,
    pub reservation: Reservation,
    /// The witness, once prepared, with its bytes split off `reservation`.
    pub spare: Option<Spare>,
    pub busy: Duration,
}

/// One partition to prove (and verify).
pub(crate) struct ProveTask {
    pub job: JobId,
    pub partition: usize,
    pub setup: Arc<Setup>,
    pub work: Work,
    pub public_inputs: Vec<Scalar>,
    pub reservation: Reservation,
    pub cancelled: Arc<AtomicBool>,
    pub span: tracing::Span,
}

/// A lane's report. The witness (or prepared work) is already freed; the reservation comes back with it and
/// is released by the dispatcher as it counts the partition done, so that no snapshot sees
/// the memory free while the partition still counts as proving.
pub(crate) struct ProveDone {
    pub lane: usize,
    pub job: JobId,
    pub partition: usize,
    pub reservation: Reservation,
    pub outcome: Result<Proof, JobError>,
    pub prove: Duration,
    pub verify: Duration,
}

/// A job whose partitions are all proved and whose kind makes its proof from them
/// ([`Instance::finish`]); run by a thread of its own.
pub(crate) struct FinishTask {
    pub job: JobId,
    pub instance: Arc<dyn Instance>,
    pub proofs: Vec<Proof>,
    pub span: tracing::Span,
}

/// A finishing thread's report.
pub(crate) struct FinishDone {
    pub job: JobId,
    pub outcome: Result<Vec<u8>, JobError>,
}
