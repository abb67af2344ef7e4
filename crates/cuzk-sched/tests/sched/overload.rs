//! Overload: far more work than the memory budget admits at once. Everything completes or
//! is refused with a reason, and memory in use never exceeds the budget.

use crate::common::*;
use cuzk_groth16::{prepare_verifying_key, verify_proof};
use cuzk_sched::plugin::{Backend, Shape};
use cuzk_sched::{Request, SchedulerConfig, SubmitError};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[test]
fn overload_completes_or_refuses_within_the_budget() {
    let counter = Arc::new(Counter::default());
    let backend = Tracked::with_lanes(Behaviour::Count(Arc::clone(&counter)), 2, 2);
    let per_partition = backend.partition_bytes(&Shape {
        constraints: 1 << LOG2,
        inputs: 2,
        aux: 1 << LOG2,
    });
    // Room for three partitions (and a half), with four lanes and four synthesis workers
    // that could run more: memory is what limits.
    let budget = 3 * per_partition + per_partition / 2;
    let kinds = vec![Twisted {
        name: "counted",
        twist: Twist::Counted(Arc::clone(&counter)),
    }];
    let config = SchedulerConfig {
        max_queued_jobs: 20,
        ..SchedulerConfig::default()
    };
    let s = start(backend, registry(kinds), budget, config);

    let submissions = 50;
    let needed = submissions * per_partition;
    assert!(needed >= 3 * budget, "the test must overload the budget");
    let mut accepted = Vec::new();
    let mut refused = 0;
    for seed in 0..submissions {
        let mut request = Request::synthetic_porep(LOG2, seed, 1);
        request.kind = "counted".into();
        match s.submit(request) {
            Ok(handle) => accepted.push(handle),
            Err(SubmitError::QueueFull { limit: 20 }) => refused += 1,
            Err(other) => panic!("unexpected refusal: {other}"),
        }
    }
    assert!(accepted.len() >= 20);
    assert_eq!(accepted.len() + refused, submissions as usize);

    let outputs: Vec<_> = accepted
        .into_iter()
        .map(|h| h.wait_blocking().unwrap())
        .collect();
    let pvk = prepare_verifying_key(&s.registry().cached("synthetic-porep-256").unwrap().vk);
    for out in &outputs {
        assert!(verify_proof(&pvk, &out.proofs[0], &out.public_inputs[0]).unwrap());
    }

    let peak = counter.peak.load(Ordering::SeqCst) as u64;
    assert!(
        peak * per_partition <= budget,
        "{peak} partitions held memory at once"
    );
    let m = s.metrics();
    assert!(m.memory.high_water <= budget);
    assert!(m.memory.high_water >= 2 * per_partition, "work overlapped");
    assert_eq!(
        m.memory.used, m.setup_bytes,
        "only the cached setups hold memory"
    );
    assert_eq!(m.jobs.refused, refused as u64);
    assert_eq!(m.jobs.succeeded + m.jobs.refused, submissions);
}
