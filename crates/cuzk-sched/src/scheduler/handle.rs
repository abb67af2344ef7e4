//! The handle of an accepted job: a future of its result, or a blocking wait.

use crate::{JobError, JobId, JobOutput};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::oneshot;

/// An accepted job: its id, and its result once it is done. Await it (any async runtime)
/// or call [`JobHandle::wait_blocking`]. Dropping it leaves the job running; its result is
/// then discarded.
#[derive(Debug)]
pub struct JobHandle {
    id: JobId,
    receiver: oneshot::Receiver<Result<JobOutput, JobError>>,
}

impl JobHandle {
    pub(crate) fn new(
        id: JobId,
        receiver: oneshot::Receiver<Result<JobOutput, JobError>>,
    ) -> JobHandle {
        JobHandle { id, receiver }
    }

    /// The job's id, for status and cancel.
    pub fn id(&self) -> JobId {
        self.id
    }

    /// Blocks the thread until the job is done. Panics if called from within an async
    /// runtime's thread (await the handle there).
    pub fn wait_blocking(self) -> Result<JobOutput, JobError> {
        let id = self.id;
        self.receiver
            .blocking_recv()
            .unwrap_or(Err(JobError::ShutDown { job: id }))
    }
}

impl Future for JobHandle {
    type Output = Result<JobOutput, JobError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        // The sender is only dropped unsent if the scheduler vanished mid-job.
        Pin::new(&mut self.receiver)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(JobError::ShutDown { job: id })))
    }
}
