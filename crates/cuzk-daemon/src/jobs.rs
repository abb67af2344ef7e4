//! The daemon's table of jobs: each job's outcome, kept until pushed out by newer finished
//! jobs, so that AwaitProof can be called after the job ended; the callers' request ids and
//! what each asked for; who is waiting on each job.
//!
//! Job ids are `<start>-<n>`: `<start>` is drawn at random when the daemon starts, so an id
//! from before a restart (or from another daemon) names no job here, never another one.

use crate::proto::{await_proof_response, AwaitProofResponse};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// A job's outcome once known: the response AwaitProof returns.
pub type Outcome = Option<Arc<AwaitProofResponse>>;

/// A digest of everything a submission asks for (all its fields but the request id).
pub type Digest = [u8; 32];

/// What the table knows of the job a request id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prior {
    /// No job under this request id.
    None,
    /// A job asking for the same thing, queued or running: attach to it.
    Running(u64),
    /// A job asking for the same thing that produced its proofs: its outcome answers.
    Completed(u64),
    /// A job that failed, was cancelled or timed out, or asked for something else: the
    /// request gets a new job.
    Stale,
}

/// One job as the daemon sees it.
#[derive(Debug)]
struct Entry {
    /// What the caller asked for (a circuit's or a proof kind's name), for GetStatus.
    kind: String,
    request_id: String,
    digest: Digest,
    outcome: watch::Receiver<Outcome>,
    /// Callers waiting on the job now (Prove and AwaitProof calls).
    waiters: usize,
    /// Whether the job stops when nobody waits on it any more (after the grace period): a
    /// job made by Prove, which nobody but a waiting caller can collect. SubmitProof's jobs
    /// wait for an AwaitProof however late it comes.
    stops_unwatched: bool,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<u64, Entry>,
    by_request: HashMap<String, u64>,
    /// Finished jobs, oldest first; beyond `history` the oldest is forgotten.
    finished: VecDeque<u64>,
}

/// Jobs by id and by the caller's request id.
#[derive(Debug)]
pub struct Jobs {
    inner: Mutex<Inner>,
    history: usize,
    start: String,
}

/// A held lock on the table, so that a lookup by request id and the insertion of a new job
/// are one step (two submissions with one key make one job).
#[derive(Debug)]
pub struct Locked<'a>(MutexGuard<'a, Inner>);

/// Why a job id names no job of this table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Not of the form this daemon writes.
    #[error("job_id {0:?} is not a job id of this daemon (they look like \"<start>-<n>\")")]
    Malformed(String),
    /// Well formed, but issued by another start of the daemon (or another daemon).
    #[error("job_id {0:?} was not issued since this daemon started (it restarted, or the id is another daemon's)")]
    OtherStart(String),
}

impl Jobs {
    /// A table remembering `history` finished jobs, with a fresh random start prefix.
    pub fn new(history: usize) -> Jobs {
        Jobs::with_start(history, random_start())
    }

    /// As [`Jobs::new`], with a given start prefix (tests).
    pub fn with_start(history: usize, start: String) -> Jobs {
        Jobs {
            inner: Mutex::new(Inner::default()),
            history,
            start,
        }
    }

    /// The wire id of job `id`.
    pub fn wire_id(&self, id: u64) -> String {
        format!("{}-{id}", self.start)
    }

    /// The job a wire id names, if this start issued it.
    pub fn parse_id(&self, text: &str) -> Result<u64, IdError> {
        let text = text.trim();
        let (start, n) = text
            .rsplit_once('-')
            .ok_or_else(|| IdError::Malformed(text.to_string()))?;
        let n: u64 = n
            .parse()
            .map_err(|_| IdError::Malformed(text.to_string()))?;
        if start != self.start {
            return Err(IdError::OtherStart(text.to_string()));
        }
        Ok(n)
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
                if inner.by_request.get(&entry.request_id) == Some(&old) {
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

    /// One more caller waits on job `id`.
    pub fn watch(&self, id: u64) {
        if let Some(e) = self.lock().0.entries.get_mut(&id) {
            e.waiters += 1;
        }
    }

    /// A caller stopped waiting on job `id`. Answers whether the job is now unfinished,
    /// watched by nobody, and one that stops when unwatched.
    pub fn unwatch(&self, id: u64) -> bool {
        let mut table = self.lock();
        let Some(e) = table.0.entries.get_mut(&id) else {
            return false;
        };
        e.waiters = e.waiters.saturating_sub(1);
        e.waiters == 0 && e.stops_unwatched && e.outcome.borrow().is_none()
    }

    /// Whether job `id` is unfinished, watched by nobody, and one that stops when unwatched
    /// (asked again when the grace period ends).
    pub fn abandoned(&self, id: u64) -> bool {
        let table = self.lock();
        table
            .0
            .entries
            .get(&id)
            .is_some_and(|e| e.waiters == 0 && e.stops_unwatched && e.outcome.borrow().is_none())
    }
}

impl Locked<'_> {
    /// What to do with a submission under `request_id` asking for `digest`.
    pub fn prior(&self, request_id: &str, digest: &Digest) -> Prior {
        if request_id.is_empty() {
            return Prior::None;
        }
        let Some(&id) = self.0.by_request.get(request_id) else {
            return Prior::None;
        };
        let Some(entry) = self.0.entries.get(&id) else {
            return Prior::None;
        };
        if entry.digest != *digest {
            return Prior::Stale;
        }
        let outcome = entry.outcome.borrow();
        match outcome.as_deref() {
            None => Prior::Running(id),
            Some(r) if r.status == i32::from(await_proof_response::Status::Completed) => {
                Prior::Completed(id)
            }
            Some(_) => Prior::Stale,
        }
    }

    /// A submission attached to job `id`: a SubmitProof (`by_prove` false) makes it a job
    /// that runs to the end whoever waits.
    pub fn attach(&mut self, id: u64, by_prove: bool) {
        if let Some(e) = self.0.entries.get_mut(&id) {
            if !by_prove {
                e.stops_unwatched = false;
            }
        }
    }

    /// Adds job `id` (submitted by Prove when `by_prove`); the returned sender publishes its
    /// outcome. The request id now names this job.
    pub fn insert(
        &mut self,
        id: u64,
        kind: String,
        request_id: String,
        digest: Digest,
        by_prove: bool,
    ) -> watch::Sender<Outcome> {
        let (tx, rx) = watch::channel(None);
        if !request_id.is_empty() {
            self.0.by_request.insert(request_id.clone(), id);
        }
        self.0.entries.insert(
            id,
            Entry {
                kind,
                request_id,
                digest,
                outcome: rx,
                waiters: 0,
                stops_unwatched: by_prove,
            },
        );
        tx
    }
}

/// A random start prefix: 16 hex digits from the process' random hashing keys and the
/// clock.
fn random_start() -> String {
    let mut h = RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(tx: &watch::Sender<Outcome>, status: await_proof_response::Status) {
        tx.send_replace(Some(Arc::new(AwaitProofResponse {
            status: status.into(),
            ..AwaitProofResponse::default()
        })));
    }

    #[test]
    fn old_finished_jobs_are_forgotten_with_their_keys() {
        let jobs = Jobs::new(2);
        let mut senders = Vec::new();
        for id in 0..3 {
            let key = format!("r{id}");
            senders.push(jobs.lock().insert(id, "sha256".into(), key, [0; 32], false));
        }
        assert_eq!(jobs.unfinished().len(), 3);
        for (id, tx) in senders.iter().enumerate() {
            done(tx, await_proof_response::Status::Completed);
            jobs.finished(id as u64);
        }
        assert!(jobs.outcome(0).is_none());
        assert_eq!(jobs.lock().prior("r0", &[0; 32]), Prior::None);
        assert_eq!(jobs.lock().prior("r2", &[0; 32]), Prior::Completed(2));
        assert!(jobs.outcome(2).unwrap().borrow().is_some());
        assert!(jobs.unfinished().is_empty());
    }

    #[test]
    fn request_ids_attach_renew_or_answer() {
        use await_proof_response::Status;
        let jobs = Jobs::new(8);
        let (a, b) = ([1; 32], [2; 32]);
        let tx0 = jobs
            .lock()
            .insert(0, "k".into(), "porep-1-2".into(), a, true);
        // Same request while running: attach; another request: a new job.
        assert_eq!(jobs.lock().prior("porep-1-2", &a), Prior::Running(0));
        assert_eq!(jobs.lock().prior("porep-1-2", &b), Prior::Stale);
        // Failed, cancelled: a new job.
        for status in [Status::Failed, Status::Cancelled] {
            done(&tx0, status);
            assert_eq!(jobs.lock().prior("porep-1-2", &a), Prior::Stale);
        }
        let tx1 = jobs
            .lock()
            .insert(1, "k".into(), "porep-1-2".into(), a, true);
        jobs.finished(0);
        done(&tx1, Status::Completed);
        jobs.finished(1);
        // Succeeded: the stored proof for the same request, never for another one.
        assert_eq!(jobs.lock().prior("porep-1-2", &a), Prior::Completed(1));
        assert_eq!(jobs.lock().prior("porep-1-2", &b), Prior::Stale);
        // The new job of another request takes the id over; forgetting the old job keeps it.
        let _tx2 = jobs
            .lock()
            .insert(2, "k".into(), "porep-1-2".into(), b, true);
        assert_eq!(jobs.lock().prior("porep-1-2", &b), Prior::Running(2));
        assert_eq!(jobs.lock().prior("", &b), Prior::None);
    }

    #[test]
    fn waiters_and_abandoned_jobs() {
        let jobs = Jobs::new(8);
        let tx = jobs
            .lock()
            .insert(0, "k".into(), String::new(), [0; 32], true);
        let _kept = jobs
            .lock()
            .insert(1, "k".into(), String::new(), [0; 32], false);
        jobs.watch(0);
        jobs.watch(0);
        assert!(!jobs.unwatch(0), "another caller still waits");
        assert!(jobs.unwatch(0), "the last waiter left a Prove job");
        assert!(jobs.abandoned(0));
        jobs.watch(0);
        assert!(!jobs.abandoned(0), "a retry re-attached");
        // A SubmitProof on the same job keeps it whoever waits.
        jobs.lock().attach(0, false);
        assert!(!jobs.unwatch(0));
        // SubmitProof's own jobs never stop unwatched; finished jobs neither.
        jobs.watch(1);
        assert!(!jobs.unwatch(1));
        done(&tx, await_proof_response::Status::Completed);
        assert!(!jobs.abandoned(0));
    }

    #[test]
    fn ids_name_jobs_of_this_start_only() {
        let jobs = Jobs::with_start(4, "0123abcd".into());
        assert_eq!(jobs.wire_id(17), "0123abcd-17");
        assert_eq!(jobs.parse_id(" 0123abcd-17 "), Ok(17));
        let other = Jobs::new(4);
        assert!(matches!(
            other.parse_id(&jobs.wire_id(17)),
            Err(IdError::OtherStart(_))
        ));
        assert!(matches!(jobs.parse_id("17"), Err(IdError::Malformed(_))));
        assert!(matches!(
            jobs.parse_id("0123abcd-x"),
            Err(IdError::Malformed(_))
        ));
        assert_ne!(Jobs::new(1).start, Jobs::new(1).start);
    }
}
