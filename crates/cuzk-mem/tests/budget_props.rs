//! Property tests of the budget ledger: it never grants more than its capacity, alone or
//! under concurrent reservers, and every guard gives its bytes back, also on panic.

use cuzk_mem::{Budget, MemError, Reservation};
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

#[derive(Clone, Debug)]
enum Op {
    Reserve(u64),
    Release(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            (0u64..120).prop_map(Op::Reserve),
            (0usize..16).prop_map(Op::Release),
        ],
        1..80,
    )
}

proptest! {
    /// A model of the ledger: a request is granted exactly when it fits, and used is the
    /// sum of live guards.
    #[test]
    fn ledger_matches_a_model(capacity in 0u64..200, ops in ops()) {
        let budget = Budget::new("model", capacity);
        let mut live: Vec<Reservation> = Vec::new();
        let mut high = 0;
        for op in ops {
            match op {
                Op::Reserve(bytes) => {
                    let used: u64 = live.iter().map(Reservation::bytes).sum();
                    match budget.try_reserve(bytes) {
                        Ok(r) => {
                            prop_assert!(used + bytes <= capacity);
                            live.push(r);
                        }
                        Err(MemError::Unavailable { available, .. }) => {
                            prop_assert!(bytes <= capacity && used + bytes > capacity);
                            prop_assert_eq!(available, capacity - used);
                        }
                        Err(MemError::ExceedsCapacity { .. }) => prop_assert!(bytes > capacity),
                        Err(other) => prop_assert!(false, "unexpected {}", other),
                    }
                }
                Op::Release(i) if !live.is_empty() => {
                    let i = i % live.len();
                    drop(live.swap_remove(i));
                }
                Op::Release(_) => {}
            }
            let used: u64 = live.iter().map(Reservation::bytes).sum();
            high = high.max(used);
            prop_assert_eq!(budget.used(), used);
            prop_assert!(budget.used() <= capacity);
            prop_assert_eq!(budget.high_water(), high);
        }
        drop(live);
        prop_assert_eq!(budget.used(), 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Threads reserving, holding and releasing at random never hold more than the
    /// capacity between them, as counted outside the budget.
    #[test]
    fn concurrent_reservers_never_exceed_capacity(
        capacity in 10u64..100,
        threads in 2usize..6,
        sizes in prop::collection::vec(1u64..40, 30),
        blocking in any::<bool>(),
    ) {
        let budget = Budget::new("shared", capacity);
        let held = Arc::new(AtomicU64::new(0));
        let peak = Arc::new(AtomicU64::new(0));
        let start = Arc::new(Barrier::new(threads));
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (budget, held, peak, start) =
                    (budget.clone(), held.clone(), peak.clone(), start.clone());
                let sizes: Vec<u64> = sizes.iter().map(|s| s.min(&capacity) + t as u64 % 2).collect();
                std::thread::spawn(move || {
                    start.wait();
                    for bytes in sizes {
                        let r = if blocking {
                            budget.reserve_blocking(bytes, Some(Duration::from_secs(10)))
                        } else {
                            budget.try_reserve(bytes)
                        };
                        let Ok(r) = r else { continue };
                        let now = held.fetch_add(r.bytes(), Ordering::SeqCst) + r.bytes();
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        held.fetch_sub(r.bytes(), Ordering::SeqCst);
                        drop(r);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        prop_assert!(peak.load(Ordering::SeqCst) <= capacity);
        prop_assert!(budget.high_water() <= capacity);
        prop_assert_eq!(budget.used(), 0);
    }
}

#[test]
fn panicking_holders_release_their_bytes() {
    let budget = Budget::new("panics", 100);
    let b = budget.clone();
    let joined = std::thread::spawn(move || {
        let _r = b.try_reserve(60).unwrap();
        panic!("worker fails while holding memory");
    })
    .join();
    assert!(joined.is_err());
    assert_eq!(budget.used(), 0);

    let caught = std::panic::catch_unwind(|| {
        let _a = budget.try_reserve(30).unwrap();
        let _b = budget.try_reserve(30).unwrap();
        panic!("unwinding drops both guards");
    });
    assert!(caught.is_err());
    assert_eq!(budget.used(), 0);
    assert_eq!(budget.high_water(), 60);
    // The budget still works after the panics.
    assert_eq!(budget.try_reserve(100).unwrap().bytes(), 100);
}

#[test]
fn a_blocked_reserver_gets_memory_a_panicking_thread_held() {
    let budget = Budget::new("handover", 10);
    let holder = budget.clone();
    let ready = Arc::new(Barrier::new(2));
    let r2 = ready.clone();
    let failing = std::thread::spawn(move || {
        let _r = holder.try_reserve(10).unwrap();
        r2.wait();
        std::thread::sleep(Duration::from_millis(20));
        panic!("holder dies");
    });
    ready.wait();
    let got = budget
        .reserve_blocking(10, Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(got.bytes(), 10);
    assert!(failing.join().is_err());
}
