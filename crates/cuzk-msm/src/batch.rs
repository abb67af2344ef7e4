//! How a batch of MSMs against the same bases uses a VRAM allowance: whether the scalars of
//! each host set are copied whole into one of two device buffers ahead of its MSM (the copy
//! then hides behind the previous set's MSM) or staged in pieces as a single call stages them,
//! and each set's plan. Plain arithmetic, always built and tested without a GPU.

use crate::plan::{Plan, PlanInput, Sizes};
use crate::MsmError;

/// Bytes of a scalar on the device.
pub const SCALAR_BYTES: usize = 32;

/// Device buffers whole host sets are copied into: the next set's copy fills one while the
/// current set's MSM reads the other.
pub const SET_BUFFERS: usize = 2;

/// One set of a batch, as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSet {
    /// Scalars of the set.
    pub n: usize,
    /// Scalars expected past the 0/1 split (`n` without it).
    pub tail: usize,
    /// Whether zeros and ones are split off.
    pub split: bool,
    /// Whether the scalars are in host memory (else on the device, read in place).
    pub host: bool,
}

/// How a batch runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchPlan {
    /// Each set's plan.
    pub plans: Vec<Plan>,
    /// Scalars per device set buffer when host sets are copied whole ahead of their MSM
    /// (the longest host set); 0 when they are staged in pieces.
    pub prefetch_len: usize,
    /// Device set buffers (0, 1 or [`SET_BUFFERS`]).
    pub buffers: usize,
    /// The largest of each work buffer over the sets' plans, at least `result_points` long.
    pub sizes: Sizes,
    /// Whether `sizes` fits the allowance next to the set buffers: one workspace serves every
    /// set. Otherwise each set gets a workspace of its own plan's sizes.
    pub shared: bool,
}

impl BatchPlan {
    /// Plans `sets` in `base.allowance` (`base` gives the width, group and device; its `n`,
    /// `tail`, `split` and `staged` are each set's). Host sets are copied whole only when two
    /// set buffers of the longest fit next to the work buffers and cost no set an extra sort
    /// chunk or pass, which re-read or re-sort more than the hidden copy saves.
    pub fn new(sets: &[BatchSet], base: &PlanInput) -> Result<BatchPlan, MsmError> {
        let plan_all = |room: usize, prefetch: bool| -> Result<Vec<Plan>, MsmError> {
            sets.iter()
                .map(|s| {
                    Plan::new(&PlanInput {
                        n: s.n,
                        tail: s.tail,
                        split: s.split,
                        staged: s.host && !prefetch,
                        allowance: room,
                        // A batch overlaps a set's upload with the set before it instead.
                        upload_overlap: Some(false),
                        ..*base
                    })
                })
                .collect()
        };
        let largest = |plans: &[Plan]| -> Sizes {
            plans.iter().fold(Sizes::default(), |a, p| a.max(&p.sizes))
        };
        let hosts = sets.iter().filter(|s| s.host && s.n > 0).count();
        let len = sets
            .iter()
            .filter(|s| s.host)
            .map(|s| s.n)
            .max()
            .unwrap_or(0);
        let buffers = hosts.min(SET_BUFFERS);
        let set_bytes = buffers * len * SCALAR_BYTES;
        let staged = plan_all(base.allowance, false)?;
        let prefetched = (hosts > 0 && set_bytes < base.allowance)
            .then(|| plan_all(base.allowance - set_bytes, true).ok())
            .flatten()
            .filter(|plans| {
                largest(plans).bytes(base.xyzz_bytes) + set_bytes <= base.allowance
                    && plans.iter().zip(&staged).zip(sets).all(|((p, s), set)| {
                        p.passes() == s.passes() && p.chunks(set.n) == s.chunks(set.n)
                    })
            });
        let (plans, prefetch_len, buffers, set_bytes) = match prefetched {
            Some(plans) => (plans, len, buffers, set_bytes),
            None => (staged, 0, 0, 0),
        };
        let mut sizes = largest(&plans);
        sizes.result_points = sizes.result_points.max(1);
        let shared = sizes.bytes(base.xyzz_bytes) + set_bytes <= base.allowance;
        Ok(BatchPlan {
            plans,
            prefetch_len,
            buffers,
            sizes,
            shared,
        })
    }

    /// Points of the result slots: the most windows of any set's plan, plus one.
    pub fn result_points(&self) -> usize {
        self.plans
            .iter()
            .map(|p| p.windows as usize + 1)
            .max()
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(allowance: usize) -> PlanInput {
        PlanInput {
            n: 0,
            tail: 0,
            bits: None,
            split: false,
            staged: false,
            xyzz_bytes: 192,
            sm_count: 132,
            allowance,
            affine_levels: Some(0),
            pair_group: 0,
            binned_scatter: Some(false),
            copies: 1,
            upload_overlap: Some(false),
        }
    }

    fn host(n: usize) -> BatchSet {
        BatchSet {
            n,
            tail: n,
            split: false,
            host: true,
        }
    }

    fn single(set: &BatchSet, allowance: usize) -> Plan {
        Plan::new(&PlanInput {
            n: set.n,
            tail: set.tail,
            split: set.split,
            staged: set.host,
            allowance,
            ..base(allowance)
        })
        .unwrap()
    }

    #[test]
    fn roomy_allowance_copies_host_sets_whole() {
        let sets = [host(1 << 26), host(1 << 20), host(0), host(1)];
        let allowance = 100 << 30;
        let b = BatchPlan::new(&sets, &base(allowance)).unwrap();
        assert_eq!((b.prefetch_len, b.buffers), (1 << 26, 2));
        assert!(b.shared);
        for (p, s) in b.plans.iter().zip(&sets) {
            assert_eq!(p.sizes.staging, 0, "{p:?}");
            let one = single(s, allowance);
            assert_eq!(
                (p.bits, p.passes(), p.chunks(s.n)),
                (one.bits, one.passes(), one.chunks(s.n))
            );
        }
        assert!(b.sizes.bytes(192) + 2 * (1 << 26) * SCALAR_BYTES <= allowance);
        assert_eq!(
            b.result_points(),
            b.plans
                .iter()
                .map(|p| p.windows as usize + 1)
                .max()
                .unwrap()
        );
        // One host set needs one buffer.
        let b = BatchPlan::new(&[host(1000)], &base(allowance)).unwrap();
        assert_eq!((b.prefetch_len, b.buffers), (1000, 1));
    }

    #[test]
    fn device_sets_alone_need_no_set_buffers() {
        let dev = BatchSet {
            host: false,
            ..host(1 << 20)
        };
        let b = BatchPlan::new(&[dev, dev], &base(8 << 30)).unwrap();
        assert_eq!((b.prefetch_len, b.buffers), (0, 0));
        assert_eq!(b.plans[0], single(&dev, 8 << 30));
        let b = BatchPlan::new(&[dev, host(0)], &base(8 << 30)).unwrap();
        assert_eq!((b.prefetch_len, b.buffers), (0, 0));
    }

    #[test]
    fn tight_allowance_stages_like_single_calls() {
        let sets = [host(20_000), host(10_000), host(20_000)];
        let input = PlanInput {
            n: 20_000,
            tail: 20_000,
            staged: true,
            ..base(0)
        };
        // Less than two sets of scalars.
        let allowance = Plan::with_chunk(&input, 10, 1, 2000).bytes(192);
        assert!(allowance < 2 * 20_000 * SCALAR_BYTES);
        let b = BatchPlan::new(&sets, &base(allowance)).unwrap();
        assert_eq!((b.prefetch_len, b.buffers), (0, 0));
        for (p, s) in b.plans.iter().zip(&sets) {
            assert_eq!(*p, single(s, allowance));
        }
        assert!(b.sizes.bytes(192) <= allowance || !b.shared);
    }

    #[test]
    fn copying_whole_never_costs_a_chunk_or_a_pass_and_always_fits() {
        for allowance in [1 << 20, 3 << 20, 10 << 20, 40 << 20, 200 << 20, 2 << 30] {
            for lens in [&[100_000, 50_000][..], &[1 << 20], &[3, 70_000, 0, 5000]] {
                let sets: Vec<BatchSet> = lens.iter().map(|&n| host(n)).collect();
                let Ok(b) = BatchPlan::new(&sets, &base(allowance)) else {
                    continue;
                };
                let set_bytes = b.buffers * b.prefetch_len * SCALAR_BYTES;
                if b.shared {
                    assert!(b.sizes.bytes(192) + set_bytes <= allowance);
                }
                for (p, s) in b.plans.iter().zip(&sets) {
                    let one = single(s, allowance);
                    assert_eq!((p.passes(), p.chunks(s.n)), (one.passes(), one.chunks(s.n)));
                    assert!(p.sizes.bytes(192) + set_bytes <= allowance);
                    assert!(b.sizes.covers(&p.sizes));
                }
                if b.prefetch_len > 0 {
                    assert!(
                        set_bytes <= allowance && b.shared,
                        "{lens:?} in {allowance}"
                    );
                }
            }
        }
    }
}
