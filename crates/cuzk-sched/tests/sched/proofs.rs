//! Proofs come back valid, with their public inputs, timings and metrics; through the
//! async, handle and blocking APIs; with generated or supplied parameters.

use crate::common::*;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_groth16::{generate_parameters, prepare_verifying_key, verify_proof, Proof};
use cuzk_sched::{
    JobError, JobOutput, JobState, Priority, ProveError, Request, SchedulerConfig, SetupError,
    SubmitError,
};
use cuzk_synth::Pce;
use rand::SeedableRng;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Verifies every proof of `out` against the cached verifying key, independently of the
/// scheduler's own check.
fn verify_independently(s: &cuzk_sched::Scheduler, out: &JobOutput) {
    let setup = s.registry().cached(&out.circuit_key).expect("set up");
    let pvk = prepare_verifying_key(&setup.vk);
    assert_eq!(out.proofs.len(), out.public_inputs.len());
    for (proof, inputs) in out.proofs.iter().zip(&out.public_inputs) {
        assert!(verify_proof(&pvk, proof, inputs).unwrap());
    }
    let bytes = out.proof_bytes();
    assert_eq!(bytes.len(), Proof::SIZE * out.proofs.len());
    assert_eq!(
        Proof::from_bytes(&bytes[..Proof::SIZE]).unwrap(),
        out.proofs[0]
    );
}

#[test]
fn sha256_and_multi_partition_synthetic_proofs_verify() {
    let s = start(
        cpu(),
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let sha = s.submit(Request::sha256(b"z".to_vec())).unwrap();
    let synthetic = s
        .submit(Request::synthetic_porep(10, 7, 3).with_priority(Priority::High))
        .unwrap();

    let out = synthetic.wait_blocking().unwrap();
    assert_eq!(out.circuit_key, "synthetic-porep-1024");
    assert!(out.verified);
    for (i, inputs) in out.public_inputs.iter().enumerate() {
        assert_eq!(
            *inputs,
            SyntheticPoRep::new(1024, 7 + i as u64).public_inputs()
        );
    }
    verify_independently(&s, &out);
    let t = &out.timings;
    assert_eq!(t.partitions.len(), 3);
    assert!(t.queue_wait <= t.total && t.prove > Duration::ZERO && t.verify > Duration::ZERO);
    assert!(t
        .partitions
        .iter()
        .all(|p| p.memory_bytes > 0 && p.synthesis > Duration::ZERO));

    let out = sha.wait_blocking().unwrap();
    assert_eq!(out.circuit_key, "sha256-preimage-1B");
    assert_eq!(
        out.public_inputs,
        [Sha256Preimage::new(b"z".to_vec()).public_inputs()]
    );
    verify_independently(&s, &out);
    assert!(
        out.timings.setup > Duration::ZERO,
        "parameters were generated for it"
    );

    let m = s.metrics();
    assert_eq!(
        (m.jobs.submitted, m.jobs.succeeded, m.jobs.failed),
        (2, 2, 0)
    );
    assert_eq!(m.lanes.len(), 1);
    assert_eq!(m.lanes[0].proofs, 4);
    assert!(m.lanes[0].utilization > 0.0 && m.lanes[0].utilization <= 1.0);
    assert_eq!(m.synthesis.partitions, 4);
    // Only the two cached setups hold memory now, their own bytes.
    assert!(m.setup_bytes > 0);
    assert_eq!(m.memory.used, m.setup_bytes);
    assert!(m.memory.high_water > 0 && m.memory.high_water <= m.memory.capacity);
    assert_eq!(m.setups_cached, 2);
    assert_eq!(s.status(out.id).unwrap().state, JobState::Succeeded);

    // The same circuit again: its setup is cached, so the job spent no time on it.
    let again = s
        .submit(Request::sha256(b"y".to_vec()))
        .unwrap()
        .wait_blocking()
        .unwrap();
    assert_eq!(again.circuit_key, "sha256-preimage-1B");
    assert_eq!(again.timings.setup, Duration::ZERO);
}

#[tokio::test]
async fn the_async_api_awaits_results() {
    let s = start(
        cpu(),
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let handles: Vec<_> = (0..3)
        .map(|seed| s.submit(Request::synthetic_porep(LOG2, seed, 1)).unwrap())
        .collect();
    let ids: Vec<_> = handles.iter().map(|h| h.id()).collect();
    for (h, seed) in handles.into_iter().zip(0..) {
        let out = h.await.unwrap();
        assert_eq!(out.public_inputs[0], vec![p_of(seed)]);
    }
    for id in ids {
        assert_eq!(s.status(id).unwrap().state, JobState::Succeeded);
    }
    // A timer from the runtime, to show the scheduler does not block it.
    tokio::time::sleep(Duration::from_millis(1)).await;
}

#[test]
fn blocking_convenience_and_refusals() {
    let s = start(
        cpu(),
        registry(vec![]),
        64 << 20,
        SchedulerConfig::default(),
    );
    let out = s
        .prove_blocking(Request::synthetic_porep(LOG2, 1, 2))
        .unwrap();
    assert_eq!(out.proofs.len(), 2);

    let err = s
        .prove_blocking(Request::new("nope", Default::default()))
        .unwrap_err();
    assert!(matches!(
        err,
        ProveError::Submit(SubmitError::UnknownKind { ref kind, ref known })
            if kind == "nope" && known.contains(&"sha256".to_string())
    ));
    let err = s.submit(Request::synthetic_porep(40, 0, 1)).unwrap_err();
    assert!(matches!(err, SubmitError::InvalidInput { ref kind, .. } if kind == "synthetic-porep"));
    // 2^20 constraints need about 550 MiB on the CPU prover: more than the 64 MiB budget.
    let err = s.submit(Request::synthetic_porep(20, 0, 1)).unwrap_err();
    assert!(matches!(
        err,
        SubmitError::TooLarge { ref circuit_key, needed, capacity }
            if circuit_key == "synthetic-porep-1048576" && needed > capacity
    ));
    let m = s.metrics();
    assert_eq!(
        (m.jobs.invalid, m.jobs.refused, m.jobs.submitted),
        (2, 1, 1)
    );
}

#[test]
fn supplied_parameters_are_used_and_checked() {
    let registry = registry(vec![]);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let pce = Pce::record(SyntheticPoRep::new(1 << LOG2, 0)).unwrap();
    let params = generate_parameters(&pce, &mut rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    registry.supply_parameters("synthetic-porep-256", params);
    // Parameters of another circuit under the key of this one.
    let small = Pce::record(SyntheticPoRep::new(4, 0)).unwrap();
    registry.supply_parameters(
        "synthetic-porep-512",
        generate_parameters(&small, &mut rng).unwrap(),
    );

    let s = start(cpu(), registry, BIG_BUDGET, SchedulerConfig::default());
    let out = s
        .prove_blocking(Request::synthetic_porep(LOG2, 3, 1))
        .unwrap();
    assert!(verify_proof(&pvk, &out.proofs[0], &out.public_inputs[0]).unwrap());
    assert!(
        !s.registry()
            .cached("synthetic-porep-256")
            .unwrap()
            .generated
    );

    let err = s
        .prove_blocking(Request::synthetic_porep(9, 0, 1))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ProveError::Job(JobError::Setup {
                source: SetupError::Mismatch {
                    what: "l",
                    expected: 512,
                    found: 4,
                    ..
                },
                ..
            })
        ),
        "{err}"
    );
}

#[test]
fn the_api_types_cross_threads() {
    // A daemon keeps the scheduler in an `Arc` shared by its request handlers and moves
    // handles into tasks.
    fn shared<T: Send + Sync + 'static>() {}
    fn movable<T: Send + 'static>() {}
    shared::<cuzk_sched::Scheduler>();
    shared::<cuzk_sched::Registry>();
    movable::<cuzk_sched::JobHandle>();
    movable::<Result<JobOutput, JobError>>();
}

#[test]
fn a_cached_setup_stays_visible_while_its_jobs_look_it_up() {
    let s = Arc::new(start(
        cpu(),
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    ));
    s.prove_blocking(Request::synthetic_porep(LOG2, 1, 1))
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let provers: Vec<_> = (0..3)
        .map(|t| {
            let (s, done) = (Arc::clone(&s), Arc::clone(&done));
            std::thread::spawn(move || {
                for seed in 0..15 {
                    s.prove_blocking(Request::synthetic_porep(LOG2, t * 100 + seed, 1))
                        .unwrap();
                }
                done.store(true, Ordering::SeqCst);
            })
        })
        .collect();
    let mut looked = 0u64;
    while !done.load(Ordering::SeqCst) {
        assert!(
            s.registry().cached("synthetic-porep-256").is_some(),
            "a made setup was reported missing while a job looked it up"
        );
        assert_eq!(s.registry().cached_keys(), ["synthetic-porep-256"]);
        looked += 1;
    }
    for p in provers {
        p.join().unwrap();
    }
    assert!(looked > 0);
}

#[test]
fn each_partition_is_told_its_share_of_the_cpu_pool() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kind = Twisted {
        name: "sharing",
        twist: Twist::Shares(Arc::clone(&seen)),
    };
    let s = start(
        cpu(),
        registry(vec![kind]),
        BIG_BUDGET,
        SchedulerConfig {
            synthesis_workers: Some(2),
            ..SchedulerConfig::default()
        },
    );
    let inputs = cuzk_sched::Inputs::default()
        .with_field("log2_constraints", LOG2 as u64)
        .with_field("partitions", 3);
    s.prove_blocking(Request::new("sharing", inputs)).unwrap();
    let expected = Some((rayon::current_num_threads() / 2).max(1));
    assert_eq!(*seen.lock().unwrap(), vec![expected; 3]);
    // Outside the scheduler's workers nobody set one.
    assert_eq!(cuzk_sched::plugin::share::synthesis_share(), None);
}

#[test]
fn a_kinds_synthesis_scratch_is_part_of_each_partitions_reservation() {
    let inputs = || {
        cuzk_sched::Inputs::default()
            .with_field("log2_constraints", LOG2 as u64)
            .with_field("partitions", 1)
    };
    let kinds = vec![
        Twisted {
            name: "roomy",
            twist: Twist::Scratch(1 << 20),
        },
        Twisted {
            name: "huge",
            twist: Twist::Scratch(2 * BIG_BUDGET),
        },
    ];
    let s = start(
        cpu(),
        registry(kinds),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let plain = s
        .prove_blocking(Request::new("synthetic-porep", inputs()))
        .unwrap();
    let roomy = s.prove_blocking(Request::new("roomy", inputs())).unwrap();
    assert!(verify_proof(
        &prepare_verifying_key(&roomy.verifying_key),
        &roomy.proofs[0],
        &roomy.public_inputs[0]
    )
    .unwrap());
    let (p, r) = (
        plain.timings.partitions[0].memory_bytes,
        roomy.timings.partitions[0].memory_bytes,
    );
    assert_eq!(r, p + (1 << 20), "the scratch is reserved with the witness");
    match s.submit(Request::new("huge", inputs())) {
        Err(SubmitError::TooLarge { needed, .. }) => assert!(needed > 2 * BIG_BUDGET),
        other => panic!("a partition whose scratch exceeds the budget was not refused: {other:?}"),
    }
}
