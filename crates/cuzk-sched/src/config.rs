//! The scheduler's knobs and their defaults.

use crate::StartError;

/// How the scheduler runs. The defaults suit one backend whose lanes are the bottleneck.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// Threads synthesizing witnesses (`None`: one per lane, so that every lane can have a
    /// partition synthesized while it proves the previous one).
    pub synthesis_workers: Option<usize>,
    /// Most partitions synthesizing or synthesized but not yet on a lane (`None`: one per
    /// lane). This paces synthesis to what the backend consumes: witnesses are not built
    /// faster than lanes take them, so they do not pile up in memory.
    pub lookahead: Option<usize>,
    /// Most jobs accepted and not finished (waiting or running); beyond it submissions are
    /// refused with [`crate::SubmitError::QueueFull`].
    pub max_queued_jobs: usize,
    /// Verify every proof before returning it (on by default: a wrong proof is caught here,
    /// not on chain).
    pub verify_proofs: bool,
    /// Finished jobs whose status stays queryable.
    pub finished_history: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            synthesis_workers: None,
            lookahead: None,
            max_queued_jobs: 1024,
            verify_proofs: true,
            finished_history: 1024,
        }
    }
}

/// The configuration with every `None` resolved for a backend of `lanes` lanes.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub synthesis_workers: usize,
    pub lookahead: usize,
    pub max_queued_jobs: usize,
    pub verify_proofs: bool,
    pub finished_history: usize,
}

impl SchedulerConfig {
    pub(crate) fn resolve(&self, lanes: usize) -> Result<Resolved, StartError> {
        let positive = |field: &'static str, value: usize| {
            if value == 0 {
                Err(StartError::Config {
                    field,
                    value: value.to_string(),
                    reason: "must be at least 1",
                })
            } else {
                Ok(value)
            }
        };
        Ok(Resolved {
            synthesis_workers: positive(
                "synthesis_workers",
                self.synthesis_workers.unwrap_or(lanes),
            )?,
            lookahead: positive("lookahead", self.lookahead.unwrap_or(lanes))?,
            max_queued_jobs: positive("max_queued_jobs", self.max_queued_jobs)?,
            verify_proofs: self.verify_proofs,
            finished_history: self.finished_history,
        })
    }
}
