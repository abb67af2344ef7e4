//! Where a circuit's parameters go on a device, decided from byte counts alone (so it is
//! tested without a GPU).
//!
//! The rule that keeps the lanes live: the bytes of every resident parameter set plus the
//! largest working set of any circuit placed on the device never exceed the VRAM budget.
//! A lane reserves its whole working set before a proof and waits until it is free; if
//! resident parameters could crowd the budget below a working set, that wait would never
//! end. So a new circuit is resident only if the rule still holds; otherwise idle,
//! unpinned parameters of other circuits are evicted (least recently used first) until it
//! does, and failing that the circuit is streamed, under the same rule.

use cuzk_prover::Residency;
use std::time::Instant;

/// A circuit already placed on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placed {
    /// Device bytes its resident parameters hold (0 when streamed).
    pub bytes: u64,
    /// Device bytes one of its proofs reserves.
    pub working_set: u64,
    /// Whether it may be evicted now: not pinned and used by no partition.
    pub evictable: bool,
    /// When a proof last used it.
    pub last_used: Instant,
}

/// A circuit to place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    /// Device bytes of its parameters when resident.
    pub bytes: u64,
    /// Working set of one proof with the parameters resident.
    pub resident_working_set: u64,
    /// Working set of one proof with the parameters streamed.
    pub streamed_working_set: u64,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Upload the parameters (else stream them).
    pub resident: bool,
    /// Indices (into the placed list) of circuits to evict first.
    pub evict: Vec<usize>,
}

/// Where `wanted` goes on a device whose budget is `capacity` bytes and that holds
/// `placed`; `None` when it fits nowhere under the rule (then `needed` tells by how much:
/// see [`needed_bytes`]).
pub fn place(
    policy: Residency,
    capacity: u64,
    placed: &[Placed],
    wanted: &Wanted,
) -> Option<Placement> {
    let mut order: Vec<usize> = (0..placed.len()).filter(|&i| placed[i].evictable).collect();
    order.sort_by_key(|&i| placed[i].last_used);
    let try_with = |resident: bool| -> Option<Placement> {
        let (bytes, working_set) = if resident {
            (wanted.bytes, wanted.resident_working_set)
        } else {
            (0, wanted.streamed_working_set)
        };
        // Evict one more candidate at a time, oldest first, until the rule holds.
        for evicted in 0..=order.len() {
            let gone = &order[..evicted];
            let kept = (0..placed.len()).filter(|i| !gone.contains(i));
            let (held, largest) = kept.fold((0u64, working_set), |(held, largest), i| {
                (
                    held.saturating_add(placed[i].bytes),
                    largest.max(placed[i].working_set),
                )
            });
            if held.saturating_add(bytes).saturating_add(largest) <= capacity {
                return Some(Placement {
                    resident,
                    evict: gone.to_vec(),
                });
            }
        }
        None
    };
    match policy {
        Residency::Resident => try_with(true),
        Residency::Streamed => try_with(false),
        Residency::Auto => try_with(true).or_else(|| try_with(false)),
    }
}

/// The bytes the smallest placement of `wanted` needs with everything evictable evicted:
/// what an error reports when [`place`] finds none.
pub fn needed_bytes(policy: Residency, placed: &[Placed], wanted: &Wanted) -> u64 {
    let kept = placed.iter().filter(|p| !p.evictable);
    let held: u64 = kept.clone().map(|p| p.bytes).sum();
    let largest = kept.map(|p| p.working_set).max().unwrap_or(0);
    let resident = wanted.bytes + wanted.resident_working_set.max(largest);
    let streamed = wanted.streamed_working_set.max(largest);
    held + match policy {
        Residency::Resident => resident,
        Residency::Streamed | Residency::Auto => streamed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn placed(bytes: u64, working_set: u64, evictable: bool, age: u64) -> Placed {
        Placed {
            bytes,
            working_set,
            evictable,
            last_used: Instant::now() - Duration::from_secs(age),
        }
    }

    const WANTED: Wanted = Wanted {
        bytes: 40,
        resident_working_set: 30,
        streamed_working_set: 35,
    };

    #[test]
    fn resident_when_parameters_and_the_largest_working_set_fit() {
        let p = place(Residency::Auto, 100, &[], &WANTED).unwrap();
        assert_eq!(
            p,
            Placement {
                resident: true,
                evict: vec![]
            }
        );
        // Another circuit's larger working set counts: 40 + 10 + 50 = 100 fits, 101 not.
        let others = [placed(10, 50, false, 0)];
        assert!(
            place(Residency::Auto, 100, &others, &WANTED)
                .unwrap()
                .resident
        );
        let p = place(Residency::Auto, 99, &others, &WANTED).unwrap();
        assert!(!p.resident, "streamed instead: 10 + 50 <= 99");
    }

    #[test]
    fn idle_parameters_are_evicted_oldest_first() {
        let others = [
            placed(30, 10, true, 5),
            placed(30, 10, true, 50),
            placed(30, 10, false, 500),
        ];
        // 90 held + 40 + 30 = 160; evicting the oldest evictable (index 1) gives 130.
        let p = place(Residency::Auto, 130, &others, &WANTED).unwrap();
        assert_eq!(
            p,
            Placement {
                resident: true,
                evict: vec![1]
            }
        );
        let p = place(Residency::Auto, 100, &others, &WANTED).unwrap();
        assert_eq!(
            p,
            Placement {
                resident: true,
                evict: vec![1, 0]
            }
        );
        // The pinned one (index 2) is never evicted: 30 + 40 + 30 > 95, streamed fits.
        let p = place(Residency::Auto, 95, &others, &WANTED).unwrap();
        assert!(!p.resident);
        assert!(place(Residency::Resident, 95, &others, &WANTED).is_none());
        assert!(place(Residency::Auto, 60, &others, &WANTED).is_none());
        assert_eq!(needed_bytes(Residency::Auto, &others, &WANTED), 30 + 35);
        assert_eq!(needed_bytes(Residency::Resident, &others, &WANTED), 30 + 70);
    }

    #[test]
    fn streamed_policy_never_uploads() {
        let p = place(Residency::Streamed, 1000, &[], &WANTED).unwrap();
        assert!(!p.resident && p.evict.is_empty());
    }
}
