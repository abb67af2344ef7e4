//! Cancellation, deadlines and shutdown: each ends its job at once with a status, frees its
//! memory, and leaves the scheduler serving the next job.

use crate::common::*;
use cuzk_sched::{ControlError, JobError, JobId, JobState, Request, SubmitError};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn gated_scheduler() -> (cuzk_sched::Scheduler, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let kinds = vec![Twisted {
        name: "gated",
        twist: Twist::Gated(Arc::clone(&gate)),
    }];
    (start(cpu(), registry(kinds), BIG_BUDGET, serial(1)), gate)
}

fn gated(seed: u64) -> Request {
    let mut r = Request::synthetic_porep(LOG2, seed, 1);
    r.kind = "gated".into();
    r
}

#[test]
fn cancel_queued_and_running_jobs() {
    let (s, gate) = gated_scheduler();
    let running = s.submit(gated(1)).unwrap();
    wait_running(&s, running.id());
    let queued = s.submit(Request::synthetic_porep(LOG2, 2, 3)).unwrap();
    assert_eq!(s.status(queued.id()).unwrap().state, JobState::Queued);

    s.cancel(queued.id()).unwrap();
    let (id, err) = (queued.id(), queued.wait_blocking().unwrap_err());
    assert!(matches!(err, JobError::Cancelled { job } if job == id));
    assert_eq!(s.status(id).unwrap().state, JobState::Cancelled);
    assert_eq!(
        s.cancel(id),
        Err(ControlError::AlreadyFinished {
            job: id,
            state: JobState::Cancelled
        })
    );

    // Cancelling the running job answers at once, though its synthesis is still stuck.
    s.cancel(running.id()).unwrap();
    assert!(matches!(
        running.wait_blocking(),
        Err(JobError::Cancelled { .. })
    ));
    assert!(
        s.budget().used() > 0,
        "the stuck partition still holds its memory"
    );
    gate.open();
    let next = s
        .prove_blocking(Request::synthetic_porep(LOG2, 3, 1))
        .unwrap();
    assert_eq!(next.public_inputs[0], vec![p_of(3)]);
    wait_until("memory to be released", || {
        s.budget().used() == s.registry().setup_bytes_held()
    });
    assert_eq!(
        s.cancel(JobId(999)),
        Err(ControlError::UnknownJob { job: JobId(999) })
    );
    assert_eq!(s.metrics().jobs.cancelled, 2);
}

#[test]
fn deadlines_fail_late_jobs_and_only_them() {
    let (s, gate) = gated_scheduler();
    let blocker = s.submit(gated(1)).unwrap();
    wait_running(&s, blocker.id());
    let start_time = Instant::now();
    let late = s
        .submit(Request::synthetic_porep(LOG2, 2, 1).with_timeout(Duration::from_millis(50)))
        .unwrap();
    let relaxed = s
        .submit(Request::synthetic_porep(LOG2, 3, 1).with_timeout(Duration::from_secs(60)))
        .unwrap();
    let err = late.wait_blocking().unwrap_err();
    // The deadline was set just before submission, so it is at most 50 ms after it.
    assert!(
        matches!(err, JobError::DeadlineExceeded { timeout, .. } if timeout <= Duration::from_millis(50)),
        "{err}"
    );
    assert!(
        start_time.elapsed() < Duration::from_secs(10),
        "failed at its deadline, not later"
    );

    gate.open();
    blocker.wait_blocking().unwrap();
    relaxed.wait_blocking().unwrap();
    let m = s.metrics();
    assert_eq!((m.jobs.succeeded, m.jobs.failed), (2, 1));
}

#[test]
fn shutdown_finishes_or_stops_jobs_and_refuses_new_ones() {
    let (s, gate) = gated_scheduler();
    let stuck = s.submit(gated(1)).unwrap();
    wait_running(&s, stuck.id());
    let queued = s.submit(Request::synthetic_porep(LOG2, 2, 1)).unwrap();
    let opener = {
        let gate = Arc::clone(&gate);
        // Opened after shutdown has begun waiting, so the worker can be joined.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            gate.open();
        })
    };
    let report = s.shutdown(Duration::from_millis(20));
    opener.join().unwrap();
    assert_eq!((report.finished_in_grace, report.stopped), (0, 2));
    assert!(matches!(
        stuck.wait_blocking(),
        Err(JobError::ShutDown { .. })
    ));
    assert!(matches!(
        queued.wait_blocking(),
        Err(JobError::ShutDown { .. })
    ));
    assert!(matches!(
        s.submit(Request::synthetic_porep(LOG2, 3, 1)),
        Err(SubmitError::ShuttingDown)
    ));
    assert_eq!(s.budget().used(), s.registry().setup_bytes_held());
    assert_eq!(s.shutdown(Duration::ZERO), Default::default());
}
