//! The daemon's state behind the gRPC service: the scheduler, the job table, counters, and
//! whether new work is still accepted.

use crate::convert::{self, completed, failed, submit_status, to_request};
use crate::jobs::{Digest, IdError, Jobs, Locked, Outcome, Prior};
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
    /// How long a Prove job nobody waits on any more keeps running for a retry.
    retry_grace: Duration,
}

/// A submitted job's id and how many jobs were waiting when it was accepted.
#[derive(Clone, Debug)]
pub struct Submitted {
    /// The job.
    pub id: u64,
    /// Its id on the wire.
    pub job_id: String,
    /// Jobs accepted and not started, this one included (0 when the submission attached to
    /// an earlier job).
    pub queue_position: u32,
}

/// Which call submits: SubmitProof, or Prove (whose job nobody else can collect).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// SubmitProof.
    Submit,
    /// Prove.
    Prove,
}

impl Engine {
    /// An engine over `scheduler`, remembering `history` finished jobs; a Prove job whose
    /// last waiter left keeps running for `retry_grace`.
    pub fn new(scheduler: Arc<Scheduler>, history: usize, retry_grace: Duration) -> Engine {
        Engine {
            scheduler,
            jobs: Jobs::new(history),
            counters: Counters::default(),
            draining: AtomicBool::new(false),
            retry_grace,
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

    /// Queues a request, by the request-id rules (docs/operations.md): the same request
    /// under the same id attaches to its job while it is queued or running and gets its
    /// proof once it succeeded; after a failure, cancellation or timeout, or for a different
    /// request, the id gets a new job.
    pub fn submit(
        self: &Arc<Self>,
        mut submit: SubmitProofRequest,
        via: Via,
    ) -> Result<Submitted, Status> {
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
        let digest = convert::request_digest(&mut submit);
        let kinds = self.scheduler.registry().kind_names();
        // Read before the lock: parsing is cheap, and a refusal needs no table.
        let request = to_request(submit, |name| kinds.iter().any(|k| k == name))?;
        // The table is locked only to look up and to record: parsing a large request (a C1
        // decoded, vanilla proofs checked) happens without it, so that status calls and
        // other submissions never wait on it.
        if let Some(found) = self.attach_prior(&request_id, &digest, via) {
            return Ok(found);
        }
        let refused = |e: cuzk_sched::SubmitError| {
            tracing::info!(kind = %label, error = %e, "submission refused");
            submit_status(&e)
        };
        let parsed = self.scheduler.parse(request).map_err(refused)?;
        let mut table = self.jobs.lock();
        // The same request may have come in while this one was parsed: it has the job.
        if let Some(found) = self.attach_prior_locked(&mut table, &request_id, &digest, via) {
            return Ok(found);
        }
        // Queuing is quick; under the lock, so that no second job for the request can start.
        let handle = self.scheduler.enqueue(parsed).map_err(refused)?;
        let id = handle.id().0;
        let outcome = table.insert(id, label.clone(), request_id, digest, via == Via::Prove);
        drop(table);
        let job_id = self.jobs.wire_id(id);
        tracing::info!(job = %job_id, kind = %label, "job accepted");
        let engine = Arc::clone(self);
        tokio::spawn(async move {
            let result = handle.await;
            engine.publish(id, result, outcome);
        });
        let queued = self.scheduler.metrics().jobs.queued;
        Ok(Submitted {
            id,
            job_id,
            queue_position: u32::try_from(queued).unwrap_or(u32::MAX),
        })
    }

    /// The job a submission attaches to: the running or completed one its request id names
    /// with the same digest.
    fn attach_prior(&self, request_id: &str, digest: &Digest, via: Via) -> Option<Submitted> {
        let mut table = self.jobs.lock();
        self.attach_prior_locked(&mut table, request_id, digest, via)
    }

    fn attach_prior_locked(
        &self,
        table: &mut Locked<'_>,
        request_id: &str,
        digest: &Digest,
        via: Via,
    ) -> Option<Submitted> {
        match table.prior(request_id, digest) {
            Prior::Running(id) | Prior::Completed(id) => {
                table.attach(id, via == Via::Prove);
                tracing::info!(job = %self.jobs.wire_id(id), request_id = %request_id, "request attached to its job");
                Some(Submitted {
                    id,
                    job_id: self.jobs.wire_id(id),
                    queue_position: 0,
                })
            }
            Prior::Stale => {
                tracing::info!(request_id = %request_id, "request id reused: a new job");
                None
            }
            Prior::None => None,
        }
    }

    /// Turns a finished job's result into its AwaitProof response and hands it to waiters.
    fn publish(
        &self,
        id: u64,
        result: Result<JobOutput, JobError>,
        outcome: watch::Sender<Outcome>,
    ) {
        let job_id = self.jobs.wire_id(id);
        let response = match &result {
            Ok(out) => {
                self.counters.job(&out.timings);
                let mut vk = Vec::new();
                // Writing into a Vec cannot fail.
                let _ = out.verifying_key.write(&mut vk);
                tracing::info!(
                    job = %job_id,
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
                tracing::warn!(job = %job_id, %error, "job ended without proofs");
                failed(&job_id, error, age)
            }
        };
        outcome.send_replace(Some(Arc::new(response)));
        self.jobs.finished(id);
    }

    /// The job a wire id names: NOT_FOUND for an id of another start, INVALID_ARGUMENT
    /// for one this daemon never writes.
    fn parse_id(&self, job_id: &str) -> Result<u64, Status> {
        self.jobs.parse_id(job_id).map_err(|e| match e {
            IdError::Malformed(_) => Status::invalid_argument(e.to_string()),
            IdError::OtherStart(_) => Status::not_found(e.to_string()),
        })
    }

    /// Waits for job `job_id`'s outcome, for at most `timeout` (`None`: until it is done).
    /// While it waits the caller counts as one of the job's waiters.
    pub async fn wait(
        self: &Arc<Self>,
        job_id: &str,
        timeout: Option<Duration>,
    ) -> Result<AwaitProofResponse, Status> {
        let id = self.parse_id(job_id)?;
        let mut outcome = self.jobs.outcome(id).ok_or_else(|| {
            Status::not_found(format!(
                "no job {job_id} is known (never submitted, or finished long enough ago to be forgotten)"
            ))
        })?;
        let _waiter = Waiter::new(self, id);
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

    /// Cancels job `job_id` at once, whoever waits on it; answers whether its work had
    /// started. Cancelling a finished job does nothing and is not an error.
    pub fn cancel(&self, job_id: &str) -> Result<bool, Status> {
        let id = JobId(self.parse_id(job_id)?);
        let was_running = matches!(
            self.scheduler.status(id).map(|s| s.state),
            Ok(JobState::Running)
        );
        match self.scheduler.cancel(id) {
            Ok(()) => {
                tracing::info!(job = job_id, was_running, "job cancelled");
                Ok(was_running)
            }
            Err(cuzk_sched::ControlError::AlreadyFinished { .. }) => Ok(false),
            Err(e @ cuzk_sched::ControlError::UnknownJob { .. }) => {
                Err(Status::not_found(e.to_string()))
            }
        }
    }

    /// The last waiter of Prove job `id` left: unless someone attaches within the grace
    /// period, the job is cancelled (nobody could collect its proof).
    fn left(self: &Arc<Self>, id: u64) {
        let engine = Arc::clone(self);
        let stop = move || {
            if engine.jobs.abandoned(id) && engine.scheduler.cancel(JobId(id)).is_ok() {
                tracing::info!(
                    job = %engine.jobs.wire_id(id),
                    grace_s = engine.retry_grace.as_secs_f64(),
                    "nobody waits on the Prove job any more; job cancelled"
                );
            }
        };
        if self.retry_grace.is_zero() {
            return stop();
        }
        let grace = self.retry_grace;
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                tracing::info!(
                    job = %self.jobs.wire_id(id),
                    grace_s = grace.as_secs_f64(),
                    "the Prove caller went away; the job goes on for a retry to attach"
                );
                runtime.spawn(async move {
                    tokio::time::sleep(grace).await;
                    stop();
                });
            }
            Err(_) => stop(),
        }
    }
}

/// One caller waiting on a job, from its start to its drop (a caller going away drops it).
#[derive(Debug)]
struct Waiter {
    engine: Arc<Engine>,
    id: u64,
}

impl Waiter {
    fn new(engine: &Arc<Engine>, id: u64) -> Waiter {
        engine.jobs.watch(id);
        Waiter {
            engine: Arc::clone(engine),
            id,
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if self.engine.jobs.unwatch(self.id) {
            self.engine.left(self.id);
        }
    }
}
