//! The daemon's table of jobs: each job's outcome, kept until it has been read or pushed
//! out by newer finished jobs, so that AwaitProof can be called after the job ended.

use crate::proto::AwaitProofResponse;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// A job's outcome once known: the response AwaitProof returns.
pub type Outcome = Option<Arc<AwaitProofResponse>>;

/// One job as the daemon sees it.
#[derive(Debug)]
struct Entry {
    /// What the caller asked for (a circuit's or a proof kind's name), for GetStatus.
    kind: String,
    request_id: String,
    outcome: watch::Receiver<Outcome>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    by_request: HashMap<String, u64>,
    /// Finished jobs, oldest first; beyond `history` the oldest is forgotten.
    finished: VecDeque<u64>,
}

/// Jobs by id and by the caller's idempotency key.
#[derive(Debug)]
pub struct Jobs {
    inner: Mutex<Inner>,
    history: usize,
}

/// A held lock on the table, so that a lookup by request id and the insertion of a new job
/// are one step (two submissions with one key make one job).
#[derive(Debug)]
pub struct Locked<'a>(MutexGuard<'a, Inner>);

impl Jobs {
    /// A table remembering `history` finished jobs.
    pub fn new(history: usize) -> Jobs {
        Jobs {
            inner: Mutex::new(Inner::default()),
            history,
        }
    }

    /// Locks the table. Its updates cannot panic half-way, so a poisoned lock still holds
    /// a consistent table.
    pub fn lock(&self) -> Locked<'_> {
        Locked(self.inner.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The outcome channel of job `id`, if known.
    pub fn outcome(&self, id: u64) -> Option<watch::Receiver<Outcome>> {
        self.lock().0.entries.get(&id).map(|e| e.outcome.clone())
    }

    /// Records that job `id` finished, forgetting the oldest finished jobs beyond the
    /// history.
    pub fn finished(&self, id: u64) {
        let mut table = self.lock();
        let inner = &mut table.0;
        inner.finished.push_back(id);
        while inner.finished.len() > self.history {
            let Some(old) = inner.finished.pop_front() else {
                break;
            };
            if let Some(entry) = inner.entries.remove(&old) {
                if !entry.request_id.is_empty() {
                    inner.by_request.remove(&entry.request_id);
                }
            }
        }
    }

    /// The ids and kinds of jobs not finished yet.
    pub fn unfinished(&self) -> Vec<(u64, String)> {
        let table = self.lock();
        table
            .0
            .entries
            .iter()
            .filter(|(_, e)| e.outcome.borrow().is_none())
            .map(|(&id, e)| (id, e.kind.clone()))
            .collect()
    }
}

impl Locked<'_> {
    /// The job submitted earlier with idempotency key `request_id`.
    pub fn by_request(&self, request_id: &str) -> Option<u64> {
        if request_id.is_empty() {
            return None;
        }
        self.0.by_request.get(request_id).copied()
    }

    /// Adds job `id`; the returned sender publishes its outcome.
    pub fn insert(&mut self, id: u64, kind: String, request_id: String) -> watch::Sender<Outcome> {
        let (tx, rx) = watch::channel(None);
        if !request_id.is_empty() {
            self.0.by_request.insert(request_id.clone(), id);
        }
        self.0.entries.insert(
            id,
            Entry {
                kind,
                request_id,
                outcome: rx,
            },
        );
        tx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_finished_jobs_are_forgotten_with_their_keys() {
        let jobs = Jobs::new(2);
        let mut senders = Vec::new();
        for id in 0..3 {
            senders.push(jobs.lock().insert(id, "sha256".into(), format!("r{id}")));
        }
        assert_eq!(jobs.unfinished().len(), 3);
        for (id, tx) in senders.iter().enumerate() {
            tx.send_replace(Some(Arc::new(AwaitProofResponse::default())));
            jobs.finished(id as u64);
        }
        assert!(jobs.outcome(0).is_none());
        assert!(jobs.lock().by_request("r0").is_none());
        assert_eq!(jobs.lock().by_request("r2"), Some(2));
        assert!(jobs.outcome(2).unwrap().borrow().is_some());
        assert!(jobs.unfinished().is_empty());
    }
}
