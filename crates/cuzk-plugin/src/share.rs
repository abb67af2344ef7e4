//! How many CPU threads one partition's synthesis may spread over, as the caller of
//! [`crate::Instance::synthesize`] sees it.
//!
//! The scheduler synthesizes a few partitions at once (one per synthesis worker) on one
//! shared CPU pool, so a kind that can split a partition's synthesis into parallel runs
//! (PoRep's challenges) should split it into the pool's threads divided by the partitions
//! synthesizing beside it, not by its job's partition count: a 32GiB PoRep job has 10
//! partitions, of which the scheduler synthesizes two at a time by default.

use std::cell::Cell;

thread_local! {
    static SHARE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `f` with [`synthesis_share`] saying `threads` (at least 1) on this thread; the
/// previous value is restored after it, also when `f` panics.
pub fn with_synthesis_share<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SHARE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SHARE.with(|s| s.replace(Some(threads.max(1)))));
    f()
}

/// The threads the caller lets this partition's synthesis use, when one said
/// ([`with_synthesis_share`]); `None` outside such a call (a kind then divides the pool by
/// its own count of partitions synthesizing at once).
pub fn synthesis_share() -> Option<usize> {
    SHARE.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_set_inside_the_call_only_and_restored_after_a_panic() {
        assert_eq!(synthesis_share(), None);
        let inner = with_synthesis_share(8, || {
            let nested = with_synthesis_share(0, synthesis_share);
            (synthesis_share(), nested)
        });
        assert_eq!(inner, (Some(8), Some(1)));
        assert_eq!(synthesis_share(), None);
        let caught = std::panic::catch_unwind(|| with_synthesis_share(3, || panic!("in f")));
        assert!(caught.is_err());
        assert_eq!(synthesis_share(), None);
        // Other threads see their own value.
        with_synthesis_share(5, || {
            assert_eq!(std::thread::spawn(synthesis_share).join().unwrap(), None);
        });
    }
}
