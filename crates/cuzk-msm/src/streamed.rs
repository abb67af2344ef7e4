//! How an MSM against bases kept in host memory is cut to fit a VRAM allowance: points per
//! chunk of bases streamed through the device, and the plan every chunk's MSM runs. Plain
//! arithmetic, always built and tested without a GPU.
//!
//! The bases of a chunk sit in one of two device buffers (the next chunk is uploaded into the
//! other while this one computes), and the chunk's scalars go through an ordinary
//! [`Plan`] in what the buffers leave of the allowance. The bases take at most half of it:
//! a chunk's MSM with less than half the allowance would sort in several chunks or passes,
//! which costs more than the extra chunk of bases (one more bucket sum per chunk).

use crate::plan::{Plan, PlanInput};
use crate::MsmError;

/// Device buffers of bases a streamed MSM of more than one chunk holds.
pub const BASE_BUFFERS: usize = 2;

/// How a streamed-bases MSM runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamedPlan {
    /// Points (bases and scalars) per chunk; the last chunk may be shorter.
    pub chunk: usize,
    /// Chunks, ⌈n / chunk⌉ (at least one).
    pub chunks: usize,
    /// Device bytes of the base buffers: two chunks' worth, one when there is one chunk.
    pub base_bytes: usize,
    /// The plan of every chunk's MSM, made for `chunk` points in the allowance less
    /// `base_bytes`; shorter chunks run it too.
    pub plan: Plan,
}

impl StreamedPlan {
    /// The cut with the largest chunk (`n` halved, rounded up, until it fits) whose bases take
    /// at most half of `input.allowance` and whose MSM fits the rest. `affine_bytes` is the
    /// size of one base on the device (96 for G1, 192 for G2). `input.tail` is scaled to the
    /// chunk.
    pub fn new(input: &PlanInput, affine_bytes: usize) -> Result<StreamedPlan, MsmError> {
        let n = input.n.max(1);
        let mut chunk = n;
        loop {
            let chunks = n.div_ceil(chunk);
            let buffers = if chunks == 1 { 1 } else { BASE_BUFFERS };
            let base_bytes = buffers * chunk * affine_bytes;
            let sub = PlanInput {
                n: chunk,
                tail: scale(input.tail, chunk, n),
                allowance: input.allowance.saturating_sub(base_bytes),
                // The bases' chunks are what this pipeline overlaps.
                upload_overlap: Some(false),
                ..*input
            };
            if base_bytes <= input.allowance / 2 {
                if let Ok(plan) = Plan::new(&sub) {
                    return Ok(StreamedPlan {
                        chunk,
                        chunks,
                        base_bytes,
                        plan,
                    });
                }
            }
            if chunk == 1 {
                let plan_needed = match Plan::new(&PlanInput {
                    allowance: 0,
                    ..sub
                }) {
                    Err(MsmError::AllowanceTooSmall { needed, .. }) => needed,
                    Err(e) => return Err(e),
                    Ok(p) => p.bytes(input.xyzz_bytes),
                };
                return Err(MsmError::AllowanceTooSmall {
                    allowance: input.allowance,
                    needed: (2 * base_bytes).max(base_bytes + plan_needed),
                });
            }
            chunk = chunk.div_ceil(2);
        }
    }

    /// Points of chunk `index` (the last one takes the remainder of `n`).
    pub fn range(&self, index: usize, n: usize) -> std::ops::Range<usize> {
        let lo = (index * self.chunk).min(n);
        lo..(lo + self.chunk).min(n)
    }
}

/// ⌈part · x / whole⌉, clamped to `part`: the share of `x` expected in `part` of `whole` points.
fn scale(x: usize, part: usize, whole: usize) -> usize {
    let scaled = (x as u128 * part as u128).div_ceil(whole.max(1) as u128);
    (scaled as usize).min(part)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MAX_POINTS;

    fn input(n: usize, allowance: usize, xyzz_bytes: usize) -> PlanInput {
        PlanInput {
            n,
            tail: n,
            bits: None,
            split: false,
            staged: true,
            xyzz_bytes,
            sm_count: 132,
            allowance,
            affine_levels: Some(0),
            pair_group: 0,
            binned_scatter: Some(false),
            copies: 1,
            upload_overlap: Some(false),
        }
    }

    /// Every cut covers the points once and stays inside its allowance.
    fn check(p: &StreamedPlan, n: usize, allowance: usize, affine: usize, xyzz: usize) {
        let n = n.max(1);
        assert_eq!(p.chunks, n.div_ceil(p.chunk), "{p:?}");
        assert!((p.chunks - 1) * p.chunk < n && p.chunks * p.chunk >= n);
        let covered: usize = (0..p.chunks).map(|i| p.range(i, n).len()).sum();
        assert_eq!(covered, n);
        assert!(p.range(p.chunks - 1, n).end == n);
        let buffers = if p.chunks == 1 { 1 } else { BASE_BUFFERS };
        assert_eq!(p.base_bytes, buffers * p.chunk * affine);
        assert!(p.base_bytes <= allowance / 2, "{p:?} in {allowance}");
        assert!(
            p.base_bytes + p.plan.bytes(xyzz) <= allowance,
            "{p:?}: {} + {} > {allowance}",
            p.base_bytes,
            p.plan.bytes(xyzz)
        );
        // The chunk's plan is made for the chunk, so it covers every shorter chunk too.
        assert!(p.plan.chunks(p.chunk) >= 1);
    }

    #[test]
    fn roomy_allowance_streams_one_chunk() {
        let n = 1 << 20;
        let p = StreamedPlan::new(&input(n, 64 << 30, 192), 96).unwrap();
        assert_eq!((p.chunk, p.chunks), (n, 1));
        assert_eq!(
            p.plan,
            Plan::new(&input(n, (64 << 30) - n * 96, 192)).unwrap()
        );
        check(&p, n, 64 << 30, 96, 192);
    }

    #[test]
    fn g1_2_24_in_2_gib_takes_four_chunks() {
        let (n, allowance) = (1 << 24, 2 << 30);
        let p = StreamedPlan::new(&input(n, allowance, 192), 96).unwrap();
        // 2^23 would need 1.5 GiB of bases, more than half; 2^22 needs 768 MiB.
        assert_eq!((p.chunk, p.chunks), (1 << 22, 4));
        check(&p, n, allowance, 96, 192);
    }

    #[test]
    fn cuts_fit_a_grid_of_sizes_and_allowances() {
        for (affine, xyzz) in [(96, 192), (192, 384)] {
            for n in [0, 1, 2, 3, 1000, 4097, 20_000, 1 << 20, (1 << 24) + 5] {
                for allowance in [200_000, 1 << 20, 3 << 20, 100 << 20, 2 << 30, 80 << 30] {
                    match StreamedPlan::new(&input(n, allowance, xyzz), affine) {
                        Ok(p) => check(&p, n, allowance, affine, xyzz),
                        Err(MsmError::AllowanceTooSmall { needed, .. }) => {
                            assert!(needed > allowance, "n {n}: {needed} <= {allowance}");
                            let p = StreamedPlan::new(&input(n, needed, xyzz), affine)
                                .unwrap_or_else(|e| panic!("n {n} in {needed}: {e}"));
                            check(&p, n, needed, affine, xyzz);
                        }
                        Err(e) => panic!("n {n} allowance {allowance}: {e}"),
                    }
                }
            }
        }
    }

    #[test]
    fn hopeless_allowance_names_what_would_do() {
        match StreamedPlan::new(&input(1000, 1000, 192), 96) {
            Err(MsmError::AllowanceTooSmall {
                allowance: 1000,
                needed,
            }) => {
                assert!(needed > 1000);
                assert!(StreamedPlan::new(&input(1000, needed, 192), 96).is_ok());
                assert!(StreamedPlan::new(&input(1000, needed - 1, 192), 96).is_err());
            }
            other => panic!("expected AllowanceTooSmall, got {other:?}"),
        }
    }

    #[test]
    fn tight_allowances_cut_into_more_chunks() {
        let n = 20_000;
        let mut last = 0;
        for allowance in [64 << 20, 16 << 20, 4 << 20, 2 << 20, 1 << 20] {
            let p = StreamedPlan::new(&input(n, allowance, 192), 96).unwrap();
            check(&p, n, allowance, 96, 192);
            assert!(p.chunks >= last, "{allowance}: {p:?}");
            last = p.chunks;
        }
        assert!(
            last > 2,
            "1 MiB should cut 20,000 G1 bases into several chunks"
        );
    }

    #[test]
    fn tail_scales_with_the_chunk() {
        assert_eq!(scale(500, 1000, 4000), 125);
        assert_eq!(scale(1, 1000, 4000), 1);
        assert_eq!(scale(4000, 1000, 4000), 1000);
        assert_eq!(scale(MAX_POINTS, MAX_POINTS, MAX_POINTS), MAX_POINTS);
        assert_eq!(scale(0, 10, 0), 0);
    }
}
