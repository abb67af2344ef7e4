//! Failure isolation and self-verification: a panicking or failing circuit or backend
//! fails its own job only, and a bad proof is never returned unless verification is off.

use crate::common::*;
use cuzk_groth16::{prepare_verifying_key, verify_proof};
use cuzk_sched::{JobError, Phase, Request, SchedulerConfig};

fn twisted(kind: &str, seed: u64) -> Request {
    let mut r = Request::synthetic_porep(LOG2, seed, 1);
    r.kind = kind.into();
    r
}

#[test]
fn a_panicking_or_failing_circuit_fails_only_its_job() {
    let kinds = vec![
        Twisted {
            name: "panics",
            twist: Twist::Panics,
        },
        Twisted {
            name: "fails",
            twist: Twist::Fails,
        },
    ];
    let s = start(
        cpu(),
        registry(kinds),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let err = s
        .submit(twisted("panics", 1))
        .unwrap()
        .wait_blocking()
        .unwrap_err();
    assert!(
        matches!(err, JobError::Panicked { phase: Phase::Synthesis, ref message, .. } if message.contains("circuit bug")),
        "{err}"
    );
    let err = s
        .submit(twisted("fails", 1))
        .unwrap()
        .wait_blocking()
        .unwrap_err();
    assert!(
        matches!(err, JobError::Synthesis { partition: 0, .. }),
        "{err}"
    );
    let ok = s
        .prove_blocking(Request::synthetic_porep(LOG2, 2, 1))
        .unwrap();
    assert_eq!(ok.proofs.len(), 1);
    let m = s.metrics();
    // Only the setups cached hold memory: the failed jobs' partitions released theirs.
    assert_eq!(
        (m.jobs.failed, m.jobs.succeeded, m.memory.used),
        (2, 1, m.setup_bytes)
    );
}

#[test]
fn a_panicking_backend_fails_only_its_job() {
    let backend = Tracked::new(Behaviour::PanicOn(p_of(66)));
    let s = start(
        backend,
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let bad = s.submit(Request::synthetic_porep(LOG2, 66, 1)).unwrap();
    let good = s.submit(Request::synthetic_porep(LOG2, 67, 1)).unwrap();
    let err = bad.wait_blocking().unwrap_err();
    assert!(
        matches!(
            err,
            JobError::Panicked {
                phase: Phase::Prove,
                ..
            }
        ),
        "{err}"
    );
    good.wait_blocking().unwrap();
    let lane = &s.metrics().lanes[0];
    assert_eq!((lane.proofs, lane.failures), (1, 1));
}

#[test]
fn self_verification_withholds_a_bad_proof() {
    let s = start(
        Tracked::new(Behaviour::Forge),
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let err = s
        .prove_blocking(Request::synthetic_porep(LOG2, 1, 1))
        .unwrap_err();
    assert!(
        matches!(err, cuzk_sched::ProveError::Job(JobError::VerificationFailed { ref backend, .. }) if backend == "tracked-cpu"),
        "{err}"
    );

    // With verification off the forged proof is returned, and it is indeed invalid.
    let config = SchedulerConfig {
        verify_proofs: false,
        ..SchedulerConfig::default()
    };
    let s = start(
        Tracked::new(Behaviour::Forge),
        registry(vec![]),
        BIG_BUDGET,
        config,
    );
    let out = s
        .prove_blocking(Request::synthetic_porep(LOG2, 1, 1))
        .unwrap();
    assert!(!out.verified);
    let pvk = prepare_verifying_key(&s.registry().cached(&out.circuit_key).unwrap().vk);
    assert!(!verify_proof(&pvk, &out.proofs[0], &out.public_inputs[0]).unwrap());
}
