//! The dispatcher thread: wakes on events and deadlines, applies what workers report, and
//! starts what can start.

use super::core::Ctx;
use super::tasks::{Event, FinishDone, FinishTask, ProveTask, SynthTask};
use super::{lock, Shared};
use crate::JobError;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Instant;

/// Runs until the scheduler stops. Dropping the workers' inboxes on return is what ends
/// their threads.
pub(crate) fn run(
    shared: Arc<Shared>,
    events: Receiver<Event>,
    synth_tx: Vec<Sender<SynthTask>>,
    lane_tx: Vec<Sender<ProveTask>>,
) {
    let devices = shared.backend.lanes().devices.max(1);
    let ctx = Ctx {
        budget: &shared.budget,
        lookahead: shared.config.lookahead,
        device_lookahead: shared.config.lookahead.div_ceil(devices),
        synth_tx: &synth_tx,
        lane_tx: &lane_tx,
    };
    loop {
        let deadline = lock(&shared.core).next_deadline();
        // Sleep until an event, or the earliest deadline, whichever comes first.
        let first = match deadline {
            None => match events.recv() {
                Ok(event) => Some(event),
                Err(_) => return,
            },
            Some(deadline) => {
                match events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(event) => Some(event),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        let mut core = lock(&shared.core);
        // Apply everything already queued before deciding, so that one pass sees every
        // freed lane and worker.
        for event in first.into_iter().chain(events.try_iter()) {
            core.apply(event);
        }
        core.expire(Instant::now());
        if core.stopping {
            return;
        }
        core.pump(&ctx);
        if core.jobs.is_empty() {
            shared.drained.notify_all();
        }
        let retired = core.take_retired();
        let finishing = core.take_finishing();
        drop(core);
        // Freed outside the lock: each gives its memory back, then its reserved bytes.
        drop(retired);
        for task in finishing {
            finish(task, shared.events.clone());
        }
    }
}

/// Makes a job's proof from its partition proofs on a thread of its own (an aggregation may
/// take seconds, and neither the lock nor a lane should wait for it), then reports.
fn finish(task: FinishTask, events: Sender<Event>) {
    let job = task.job;
    let report = events.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("cuzk-finish-{}", job.0))
        .spawn(move || {
            let _enter = task.span.enter();
            let start = Instant::now();
            let outcome =
                match catch_unwind(AssertUnwindSafe(|| task.instance.finish(&task.proofs))) {
                    Ok(Ok(bytes)) => Ok(bytes),
                    Ok(Err(e)) => Err(JobError::Finish {
                        job,
                        message: e.to_string(),
                    }),
                    Err(payload) => Err(JobError::Finish {
                        job,
                        message: format!("panic: {}", super::workers::panic_message(&*payload)),
                    }),
                };
            tracing::info!(
                finish_ms = start.elapsed().as_millis() as u64,
                ok = outcome.is_ok(),
                "job's proof made from its partition proofs"
            );
            let _ = report.send(Event::Finished(Box::new(FinishDone { job, outcome })));
        });
    if let Err(e) = spawned {
        let outcome = Err(JobError::Finish {
            job,
            message: format!("no finishing thread: {e}"),
        });
        let _ = events.send(Event::Finished(Box::new(FinishDone { job, outcome })));
    }
}
