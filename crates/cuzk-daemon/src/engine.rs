//! The daemon's state behind the gRPC service: the scheduler, the job table, counters, and
//! whether new work is still accepted.

use crate::convert::{self, completed, failed, submit_status, to_request};
use crate::jobs::{Jobs, Outcome};
use crate::metrics::Counters;
use crate::proto::{await_proof_response, AwaitProofResponse, ProofKind, SubmitProofRequest};
use cuzk_sched::{JobError, JobId, JobOutput, JobState, Scheduler};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tonic::Status;

/// The daemon's version, reported by GetStatus and in metrics.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Shared by every call of the service.
#[derive(Debug)]
pub struct Engine {
    scheduler: Arc<Scheduler>,
    jobs: Jobs,
    counters: Counters,
    draining: AtomicBool,
}

/// A submitted job's id and how many jobs were waiting when it was accepted.
#[derive(Clone, Copy, Debug)]
pub struct Submitted {
    /// The job.
    pub id: u64,
    /// Jobs accepted and not started, this one included.
    pub queue_position: u32,
}

impl Engine {
    /// An engine over `scheduler`, remembering `history` finished jobs.
    pub fn new(scheduler: Arc<Scheduler>, history: usize) -> Engine {
        Engine {
            scheduler,
            jobs: Jobs::new(history),
            counters: Counters::default(),
            draining: AtomicBool::new(false),
        }
    }

    /// The scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The scheduler, shared (for blocking calls moved off the async runtime).
    pub fn scheduler_arc(&self) -> Arc<Scheduler> {
        Arc::clone(&self.scheduler)
    }

    /// The job table.
    pub fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// The daemon's own counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Refuses new submissions from now on (shutdown has begun).
    pub fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The Prometheus text of the daemon now.
    pub fn metrics_text(&self) -> String {
        self.counters.render(&self.scheduler.metrics(), VERSION)
    }

    /// Queues a request; a repeated non-empty request id returns the first job.
    pub fn submit(self: &Arc<Self>, submit: SubmitProofRequest) -> Result<Submitted, Status> {
        if self.is_draining() {
            return Err(Status::unavailable("the daemon is shutting down"));
        }
        let label = if submit.circuit.is_empty() {
            ProofKind::try_from(submit.proof_kind)
                .map(|k| k.as_str_name().to_string())
                .unwrap_or_default()
        } else {
            submit.circuit.clone()
        };
        let request_id = submit.request_id.clone();
        let mut table = self.jobs.lock();
        if let Some(id) = table.by_request(&request_id) {
            return Ok(Submitted {
                id,
                queue_position: 0,
            });
        }
        let kinds = self.scheduler.registry().kind_names();
        let request = to_request(submit, |name| kinds.iter().any(|k| k == name))?;
        let handle = self.scheduler.submit(request).map_err(|e| {
            tracing::info!(kind = %label, error = %e, "submission refused");
            submit_status(&e)
        })?;
        let id = handle.id().0;
        let outcome = table.insert(id, label.clone(), request_id);
        drop(table);
        tracing::info!(job = id, kind = %label, "job accepted");
        let engine = Arc::clone(self);
        tokio::spawn(async move {
            let result = handle.await;
            engine.publish(id, result, outcome);
        });
        let queued = self.scheduler.metrics().jobs.queued;
        Ok(Submitted {
            id,
            queue_position: u32::try_from(queued).unwrap_or(u32::MAX),
        })
    }

    /// Turns a finished job's result into its AwaitProof response and hands it to waiters.
    fn publish(
        &self,
        id: u64,
        result: Result<JobOutput, JobError>,
        outcome: watch::Sender<Outcome>,
    ) {
        let job_id = id.to_string();
        let response = match &result {
            Ok(out) => {
                self.counters.job(&out.timings);
                let mut vk = Vec::new();
                // Writing into a Vec cannot fail.
                let _ = out.verifying_key.write(&mut vk);
                tracing::info!(
                    job = id,
                    circuit = %out.circuit_key,
                    partitions = out.proofs.len(),
                    queue_wait_ms = convert::millis(out.timings.queue_wait),
                    synthesis_ms = convert::millis(out.timings.synthesis),
                    prove_ms = convert::millis(out.timings.prove),
                    total_ms = convert::millis(out.timings.total),
                    "job completed"
                );
                completed(&job_id, out, vk)
            }
            Err(error) => {
                let age = self
                    .scheduler
                    .status(JobId(id))
                    .map(|s| s.age)
                    .unwrap_or_default();
                tracing::warn!(job = id, %error, "job ended without proofs");
                failed(&job_id, error, age)
            }
        };
        outcome.send_replace(Some(Arc::new(response)));
        self.jobs.finished(id);
    }

    /// Waits for job `job_id`'s outcome, for at most `timeout` (`None`: until it is done).
    pub async fn wait(
        &self,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, Status> {
        let id = convert::job_id(job_id)?;
        let mut outcome = self.jobs.outcome(id).ok_or_else(|| {
            Status::not_found(format!(
                "no job {job_id} is known (never submitted, or finished long enough ago to be forgotten)"
            ))
        })?;
        let wait = async move {
            outcome
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|o| o.clone())
        };
        let result = match timeout {
            None => wait.await,
            Some(limit) => match tokio::time::timeout(limit, wait).await {
                Ok(result) => result,
                Err(_) => {
                    return Ok(AwaitProofResponse {
                        job_id: job_id.to_string(),
                        status: await_proof_response::Status::Timeout.into(),
                        error_message: format!("job {job_id} not finished after {limit:?}"),
                        ..AwaitProofResponse::default()
                    })
                }
            },
        };
        result.map(|r| (*r).clone()).ok_or_else(|| {
            Status::unavailable(format!("the daemon stopped before job {job_id} finished"))
        })
    }

    /// Cancels job `job_id`; answers whether its work had started. Cancelling a finished
    /// job does nothing and is not an error.
    pub fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        let id = JobId(convert::job_id(job_id)?);
        let was_running = matches!(
            self.scheduler.status(id).map(|s| s.state),
            Ok(JobState::Running)
        );
        match self.scheduler.cancel(id) {
            Ok(()) => {
                tracing::info!(job = id.0, was_running, "job cancelled");
                Ok(was_running)
            }
            Err(cuzk_sched::ControlError::AlreadyFinished { .. }) => Ok(false),
            Err(e @ cuzk_sched::ControlError::UnknownJob { .. }) => {
                Err(Status::not_found(e.to_string()))
            }
        }
    }
}

/// Cancels a job when dropped armed: a Prove call whose caller went away stops its job
/// instead of proving for nobody.
#[derive(Debug)]
pub struct CancelOnDrop<'a> {
    engine: &'a Engine,
    id: u64,
    armed: bool,
}

impl<'a> CancelOnDrop<'a> {
    /// Armed for job `id`.
    pub fn new(engine: &'a Engine, id: u64) -> Self {
        CancelOnDrop {
            engine,
            id,
            armed: true,
        }
    }

    /// The job ended; nothing to cancel.
    pub fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed && self.engine.scheduler.cancel(JobId(self.id)).is_ok() {
            tracing::info!(job = self.id, "the Prove caller went away; job cancelled");
        }
    }
}
