//! The worker threads: synthesis workers make witnesses, lanes prove and verify. Each
//! catches panics, so a bad circuit or backend fails its job, not the thread.

use super::tasks::{Event, ProveDone, ProveTask, SynthDone, SynthTask, Synthesized};
use crate::{Backend, Instance, JobError, JobId, Lane, Phase, ProveInput, Registry};
use cuzk_field::{Field, Scalar};
use cuzk_groth16::Proof;
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Synthesizes partitions until the dispatcher drops its end of `tasks`.
pub(crate) fn synthesis_loop(
    index: usize,
    tasks: Receiver<SynthTask>,
    registry: Arc<Registry>,
    events: Sender<Event>,
) {
    for task in tasks {
        let start = Instant::now();
        let outcome = if task.cancelled.load(Ordering::Relaxed) {
            Err(JobError::Cancelled { job: task.job })
        } else {
            let span =
                tracing::info_span!(parent: &task.span, "synthesize", partition = task.partition);
            let _enter = span.enter();
            synthesize(&registry, &*task.instance, task.job, task.partition)
        };
        let done = SynthDone {
            worker: index,
            job: task.job,
            partition: task.partition,
            outcome,
            reservation: task.reservation,
            busy: start.elapsed(),
        };
        if events.send(Event::Synthesized(done)).is_err() {
            break;
        }
    }
}

/// Setup (from the cache, or made now), witness and public inputs of one partition.
fn synthesize(
    registry: &Registry,
    instance: &dyn Instance,
    job: JobId,
    partition: usize,
) -> Result<Synthesized, JobError> {
    let phase = Cell::new(Phase::Setup);
    let run = || {
        let (setup, setup_time) = registry
            .setup(instance)
            .map_err(|source| JobError::Setup { job, source })?;
        phase.set(Phase::Synthesis);
        let start = Instant::now();
        let witness = instance
            .synthesize(&setup.pce, partition)
            .map_err(|source| JobError::Synthesis {
                job,
                partition,
                source,
            })?;
        let public_inputs = instance.public_inputs(partition);
        Ok(Synthesized {
            setup,
            witness,
            public_inputs,
            setup_time,
            synthesis: start.elapsed(),
        })
    };
    catch_unwind(AssertUnwindSafe(run)).unwrap_or_else(|payload| {
        Err(JobError::Panicked {
            job,
            partition,
            phase: phase.get(),
            message: panic_message(&*payload),
        })
    })
}

/// Proves partitions on `lane` until the dispatcher drops its end of `tasks`.
pub(crate) fn lane_loop(
    index: usize,
    lane: Lane,
    tasks: Receiver<ProveTask>,
    backend: Arc<dyn Backend>,
    verify: bool,
    events: Sender<Event>,
) {
    for task in tasks {
        let mut times = Times::default();
        let outcome = if task.cancelled.load(Ordering::Relaxed) {
            Err(JobError::Cancelled { job: task.job })
        } else {
            let span = tracing::info_span!(parent: &task.span, "prove", partition = task.partition, lane = %lane);
            let _enter = span.enter();
            prove(&*backend, lane, &task, verify, &mut times)
        };
        // The witness goes before the report, so that its memory is free by the time the
        // dispatcher admits the next partition; the reservation travels with the report.
        let ProveTask {
            job,
            partition,
            witness,
            reservation,
            ..
        } = task;
        drop(witness);
        let done = ProveDone {
            lane: index,
            job,
            partition,
            reservation,
            outcome,
            prove: times.prove,
            verify: times.verify,
        };
        if events.send(Event::Proved(Box::new(done))).is_err() {
            break;
        }
    }
}

#[derive(Default)]
struct Times {
    prove: Duration,
    verify: Duration,
}

/// Proves with fresh randomness, then verifies unless told not to.
fn prove(
    backend: &dyn Backend,
    lane: Lane,
    task: &ProveTask,
    verify: bool,
    times: &mut Times,
) -> Result<Proof, JobError> {
    let (job, partition) = (task.job, task.partition);
    let panicked = |phase, payload: Box<dyn Any + Send>| JobError::Panicked {
        job,
        partition,
        phase,
        message: panic_message(&*payload),
    };
    let input = ProveInput {
        circuit_key: &task.setup.circuit_key,
        params: &task.setup.params,
        pce: &task.setup.pce,
        witness: &task.witness,
        r: Scalar::random(&mut rand::rngs::OsRng),
        s: Scalar::random(&mut rand::rngs::OsRng),
    };
    let start = Instant::now();
    let proved = catch_unwind(AssertUnwindSafe(|| backend.prove(lane, &input)));
    times.prove = start.elapsed();
    let proof = proved
        .map_err(|p| panicked(Phase::Prove, p))?
        .map_err(|source| JobError::Prove {
            job,
            partition,
            lane,
            source,
        })?;
    if !verify {
        return Ok(proof);
    }
    let start = Instant::now();
    let checked = catch_unwind(AssertUnwindSafe(|| {
        cuzk_groth16::verify_proof(&task.setup.pvk, &proof, &task.public_inputs)
    }));
    times.verify = start.elapsed();
    match checked.map_err(|p| panicked(Phase::Verify, p))? {
        Ok(true) => Ok(proof),
        Ok(false) => Err(JobError::VerificationFailed {
            job,
            partition,
            backend: backend.name().to_string(),
        }),
        Err(source) => Err(JobError::Verifier {
            job,
            partition,
            source,
        }),
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format string).
fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a text message".to_string()
    }
}
