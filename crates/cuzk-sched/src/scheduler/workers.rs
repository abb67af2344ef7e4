//! The worker threads: synthesis workers make witnesses (and have the backend prepare them
//! for their job's device), lanes prove and verify. Each catches panics, so a bad circuit
//! or backend fails its job, not the thread.

use super::tasks::{Event, ProveDone, ProveTask, Spare, SynthDone, SynthTask, Synthesized, Work};
use crate::{
    AnyBackend, Instance, JobError, JobId, Lane, Phase, PrepareInput, ProveInput,
    ProvePreparedInput, Registry,
};
use cuzk_field::{Field, Scalar};
use cuzk_groth16::Proof;
use cuzk_synth::Witness;
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Synthesizes (and prepares) partitions until the dispatcher drops its end of `tasks`.
pub(crate) fn synthesis_loop(
    index: usize,
    workers: usize,
    tasks: Receiver<SynthTask>,
    registry: Arc<Registry>,
    backend: Arc<dyn AnyBackend>,
    events: Sender<Event>,
) {
    for mut task in tasks {
        let start = Instant::now();
        let spare = task.spare.take().unwrap_or_default();
        let mut used = None;
        let outcome = if task.cancelled.load(Ordering::Relaxed) {
            // Freed before the reservation that covers it goes back.
            drop(spare);
            Err(JobError::Cancelled { job: task.job })
        } else {
            let span = tracing::info_span!(
                parent: &task.span,
                "synthesize",
                partition = task.partition,
                device = task.device
            );
            let _enter = span.enter();
            let keep_free = task.reservation.bytes();
            // The shared CPU pool divided among the partitions synthesizing at once: what a
            // kind that splits a partition's synthesis may spread it over.
            let share = (rayon::current_num_threads() / workers.max(1)).max(1);
            cuzk_plugin::share::with_synthesis_share(share, || {
                synthesize(
                    &registry,
                    &*task.instance,
                    task.job,
                    task.partition,
                    spare,
                    keep_free,
                )
            })
            .and_then(|s| {
                if task.cancelled.load(Ordering::Relaxed) {
                    return Err(JobError::Cancelled { job: task.job });
                }
                let (s, witness) = prepare(&*backend, s, task.job, task.partition, task.device)?;
                // What the witness's allocations held on the host (packed or value by value).
                let held = witness.as_ref().map_or(0, witness_bytes);
                used = witness;
                tracing::debug!(
                    setup_ms = s.setup_time.as_secs_f64() * 1e3,
                    synthesis_ms = s.synthesis.as_secs_f64() * 1e3,
                    prepare_ms = s.prepare.as_secs_f64() * 1e3,
                    witness_mb = held as f64 / 1e6,
                    threads = share,
                    "partition ready"
                );
                Ok(s)
            })
        };
        let mut reservation = task.reservation;
        // A prepared partition no longer needs its witness: the memory goes back with the
        // part of the reservation it accounts for, for the next synthesis to write into. A
        // witness larger than the reservation (a shape estimated short) is freed here instead.
        let spare = used.and_then(|witness| {
            let reservation = reservation.split_off(witness_bytes(&witness)).ok()?;
            Some(Spare {
                witness,
                reservation,
            })
        });
        let done = SynthDone {
            worker: index,
            job: task.job,
            partition: task.partition,
            device: task.device,
            outcome,
            reservation,
            spare,
            busy: start.elapsed(),
        };
        if events.send(Event::Synthesized(Box::new(done))).is_err() {
            break;
        }
    }
}

/// Bytes a witness's allocations hold.
fn witness_bytes(w: &Witness) -> u64 {
    let elements = w.inputs.capacity() + w.aux.capacity();
    let packed = w.packed.as_ref().map_or(0, |p| p.capacity_bytes());
    (elements as u64)
        .saturating_mul(std::mem::size_of::<Scalar>() as u64)
        .saturating_add(packed)
}

/// Setup (from the cache, or made now), witness and public inputs of one partition; the
/// witness is written into `spare`'s memory where the instance can. `keep_free`: the
/// partition's reservation, which the setup's share of the budget always leaves room for.
fn synthesize(
    registry: &Registry,
    instance: &dyn Instance,
    job: JobId,
    partition: usize,
    spare: Witness,
    keep_free: u64,
) -> Result<Synthesized, JobError> {
    let phase = Cell::new(Phase::Setup);
    let run = || {
        let (setup, setup_time) = registry
            .setup_held(instance, None, keep_free)
            .map_err(|source| JobError::Setup { job, source })?;
        phase.set(Phase::Synthesis);
        let start = Instant::now();
        let witness = instance
            .synthesize_reusing(&setup.pce, partition, spare)
            .map_err(|source| JobError::Synthesis {
                job,
                partition,
                source,
            })?;
        let public_inputs = instance.public_inputs(partition);
        Ok(Synthesized {
            setup,
            work: Work::Witness(witness),
            public_inputs,
            setup_time,
            synthesis: start.elapsed(),
            prepare: Duration::ZERO,
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

/// Has the backend prepare a synthesized partition for `device`; once the backend has made
/// its own form of it, the witness is returned beside it (no longer needed).
fn prepare(
    backend: &dyn AnyBackend,
    mut s: Synthesized,
    job: JobId,
    partition: usize,
    device: usize,
) -> Result<(Synthesized, Option<Witness>), JobError> {
    let Work::Witness(witness) = &s.work else {
        return Ok((s, None));
    };
    let start = Instant::now();
    let input = PrepareInput {
        circuit_key: &s.setup.circuit_key,
        params: &s.setup.params,
        pce: &s.setup.pce,
        witness,
    };
    let made = catch_unwind(AssertUnwindSafe(|| backend.prepare(device, &input)));
    let prepared = made
        .map_err(|payload| JobError::Panicked {
            job,
            partition,
            phase: Phase::Prepare,
            message: panic_message(&*payload),
        })?
        .map_err(|source| JobError::Prepare {
            job,
            partition,
            device,
            source,
        })?;
    let Some(prepared) = prepared else {
        return Ok((s, None));
    };
    let used = std::mem::replace(&mut s.work, Work::Prepared(prepared));
    s.prepare = start.elapsed();
    let witness = match used {
        Work::Witness(w) => Some(w),
        Work::Prepared(_) => None,
    };
    Ok((s, witness))
}

/// Proves partitions on `lane` until the dispatcher drops its end of `tasks`.
pub(crate) fn lane_loop(
    index: usize,
    lane: Lane,
    tasks: Receiver<ProveTask>,
    backend: Arc<dyn AnyBackend>,
    verify: bool,
    events: Sender<Event>,
) {
    for mut task in tasks {
        let mut times = Times::default();
        let outcome = if task.cancelled.load(Ordering::Relaxed) {
            Err(JobError::Cancelled { job: task.job })
        } else {
            let span = tracing::info_span!(parent: &task.span, "prove", partition = task.partition, lane = %lane);
            let _enter = span.enter();
            prove(&*backend, lane, &mut task, verify, &mut times)
        };
        // The witness goes before the report, so that its memory is free by the time the
        // dispatcher admits the next partition; the reservation travels with the report.
        let ProveTask {
            job,
            partition,
            work,
            reservation,
            ..
        } = task;
        drop(work);
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
    backend: &dyn AnyBackend,
    lane: Lane,
    task: &mut ProveTask,
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
    let (r, s) = (
        Scalar::random(&mut rand::rngs::OsRng),
        Scalar::random(&mut rand::rngs::OsRng),
    );
    let setup = &task.setup;
    // The prepared form is handed over by value; a placeholder witness is left behind.
    let work = std::mem::replace(&mut task.work, Work::Witness(Witness::default()));
    let start = Instant::now();
    let proved = catch_unwind(AssertUnwindSafe(move || match work {
        Work::Witness(witness) => {
            let input = ProveInput {
                circuit_key: &setup.circuit_key,
                params: &setup.params,
                pce: &setup.pce,
                witness: &witness,
                r,
                s,
            };
            backend.prove(lane, &input)
        }
        Work::Prepared(prepared) => {
            let input = ProvePreparedInput {
                circuit_key: &setup.circuit_key,
                params: &setup.params,
                pce: &setup.pce,
                r,
                s,
            };
            backend.prove_prepared(lane, &input, prepared)
        }
    }));
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
            source: Box::new(source),
        }),
    }
}

/// The text of a panic's payload (`panic!` with a literal or a format string).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a text message".to_string()
    }
}
