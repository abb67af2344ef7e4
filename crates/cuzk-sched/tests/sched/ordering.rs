//! Start order: higher priority first; within a priority the oldest job, all of its
//! partitions before the next job's.

use crate::common::*;
use cuzk_sched::{Priority, Request};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A gated job occupies the single synthesis worker while the others queue up behind it.
fn gated_start(lookahead: usize) -> (cuzk_sched::Scheduler, Arc<Tracked>, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let backend = Tracked::new(Behaviour::Record(Default::default()));
    let kinds = vec![Twisted {
        name: "gated",
        twist: Twist::Gated(Arc::clone(&gate)),
    }];
    let s = start(
        backend.clone(),
        registry(kinds),
        BIG_BUDGET,
        serial(lookahead),
    );
    (s, backend, gate)
}

fn gated(seed: u64) -> Request {
    let mut r = Request::synthetic_porep(LOG2, seed, 1);
    r.kind = "gated".into();
    r
}

#[test]
fn priorities_go_first_then_submission_order() {
    let (s, backend, gate) = gated_start(1);
    let blocker = s.submit(gated(100)).unwrap();
    wait_running(&s, blocker.id());
    let queued = [
        (1, Priority::Low),
        (2, Priority::Normal),
        (3, Priority::High),
        (4, Priority::Critical),
        (5, Priority::Normal),
        (6, Priority::High),
    ];
    let handles: Vec<_> = queued
        .iter()
        .map(|&(seed, p)| {
            s.submit(Request::synthetic_porep(LOG2, seed, 1).with_priority(p))
                .unwrap()
        })
        .collect();
    gate.open();
    blocker.wait_blocking().unwrap();
    for h in handles {
        h.wait_blocking().unwrap();
    }
    let expected: Vec<_> = [100, 4, 3, 6, 2, 5, 1].into_iter().map(p_of).collect();
    assert_eq!(backend.recorded(), expected);
}

#[test]
fn jobs_finish_in_submission_order_partitions_oldest_first() {
    let (s, backend, gate) = gated_start(2);
    let blocker = s.submit(gated(100)).unwrap();
    wait_running(&s, blocker.id());
    let handles: Vec<_> = [10, 20, 30, 40]
        .into_iter()
        .map(|seed| s.submit(Request::synthetic_porep(LOG2, seed, 2)).unwrap())
        .collect();
    gate.open();
    blocker.wait_blocking().unwrap();

    // The order in which jobs are seen finished, polling their status. Jobs seen in the
    // same poll are taken in submission order, so a tie can hide a swap but never fake one.
    let ids: Vec<_> = handles.iter().map(|h| h.id()).collect();
    let mut order = Vec::new();
    let start = Instant::now();
    while order.len() < ids.len() {
        for &id in &ids {
            if !order.contains(&id) && s.status(id).unwrap().state.is_finished() {
                order.push(id);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "jobs did not finish"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(order, ids);
    for h in handles {
        h.wait_blocking().unwrap();
    }
    let expected: Vec<_> = [100, 10, 11, 20, 21, 30, 31, 40, 41]
        .into_iter()
        .map(p_of)
        .collect();
    assert_eq!(backend.recorded(), expected);
}
