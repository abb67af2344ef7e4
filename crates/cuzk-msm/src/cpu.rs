//! The CPU reference MSM: a plain Pippenger with unsigned windows over blstrs points, parallel
//! over windows and blocks of points. Deliberately independent of the GPU design (no signed
//! digits, no sorting, no XYZZ) so that the two check each other; also the engine that
//! CPU-only builds use.

use crate::curve::MsmCurve;
use crate::digits::canonical_limbs;
use crate::MsmError;
use cuzk_field::PrimeCurveAffine as _;
use cuzk_field::Scalar;
use group::Group;
use rayon::prelude::*;

/// Points per parallel task: enough work to amortise a task's buckets.
const BLOCK: usize = 1 << 16;

/// Bits [pos, pos + bits) of a 256-bit little-endian number, `bits` ≤ 64.
fn bits_at(s: &[u64; 4], pos: usize, bits: usize) -> usize {
    let limb = |i: usize| s.get(i).copied().unwrap_or(0) as u128;
    let two = limb(pos / 64) | limb(pos / 64 + 1) << 64;
    ((two >> (pos % 64)) & ((1u128 << bits) - 1)) as usize
}

/// Window width of the reference: about log2(n) − 2, the textbook choice for unsigned buckets.
fn width(n: usize) -> usize {
    match n {
        0..=31 => 3,
        _ => ((usize::BITS - n.leading_zeros()) as usize)
            .saturating_sub(2)
            .clamp(4, 16),
    }
}

/// Σ scalars[i]·bases[i] on the CPU.
pub fn msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
) -> Result<C::Projective, MsmError> {
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    let limbs: Vec<[u64; 4]> = scalars.par_iter().map(canonical_limbs).collect();
    // Each task sees at most BLOCK points, so the width follows the block, not the total.
    let c = width(bases.len().min(BLOCK));
    let windows = 255usize.div_ceil(c);
    let blocks = bases.len().div_ceil(BLOCK).max(1);
    // Every (window, block) task sums its points into its own buckets and reduces them; the
    // per-window results are then added, and windows combined by Horner's rule.
    let per_task: Vec<C::Projective> = (0..windows * blocks)
        .into_par_iter()
        .map(|task| {
            let (w, b) = (task / blocks, task % blocks);
            let range = b * BLOCK..((b + 1) * BLOCK).min(bases.len());
            let mut buckets = vec![C::Projective::identity(); (1 << c) - 1];
            for i in range {
                let d = bits_at(&limbs[i], w * c, c);
                if d != 0 {
                    buckets[d - 1] += &bases[i];
                }
            }
            let mut running = C::Projective::identity();
            let mut sum = C::Projective::identity();
            for bucket in buckets.iter().rev() {
                running += bucket;
                sum += running;
            }
            sum
        })
        .collect();
    let mut acc = C::Projective::identity();
    for w in (0..windows).rev() {
        for _ in 0..c {
            acc = acc.double();
        }
        for b in 0..blocks {
            acc += per_task[w * blocks + b];
        }
    }
    Ok(acc)
}

/// Σ scalars[i]·bases[i] one multiplication at a time: the slowest and plainest reference.
pub fn naive<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
) -> Result<C::Projective, MsmError> {
    if bases.len() != scalars.len() {
        return Err(MsmError::LengthMismatch {
            bases: bases.len(),
            scalars: scalars.len(),
        });
    }
    Ok(bases
        .par_iter()
        .zip(scalars)
        .map(|(b, s)| b.to_curve() * s)
        .reduce(C::Projective::identity, |a, b| a + b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{G1, G2};
    use crate::testing::{random_bases, random_scalars};
    use cuzk_field::PrimeCurveAffine;
    use ff::Field;

    fn agrees<C: MsmCurve>(n: usize, seed: u64) {
        let bases = random_bases::<C>(n, seed);
        let scalars = random_scalars(n, seed + 1);
        assert_eq!(
            msm::<C>(&bases, &scalars).unwrap(),
            naive::<C>(&bases, &scalars).unwrap(),
            "{} n = {n}",
            C::NAME
        );
    }

    #[test]
    fn pippenger_matches_naive_sums() {
        for n in [0, 1, 2, 3, 31, 32, 100, 1000] {
            agrees::<G1>(n, n as u64);
        }
        for n in [1, 3, 64] {
            agrees::<G2>(n, n as u64);
        }
    }

    #[test]
    fn edge_scalars_and_bases() {
        let n = 200;
        let mut bases = random_bases::<G1>(n, 9);
        let mut scalars = random_scalars(n, 10);
        for i in (0..n).step_by(7) {
            bases[i] = PrimeCurveAffine::identity();
        }
        for i in (0..n).step_by(5) {
            scalars[i] = -Scalar::ONE;
        }
        for i in (0..n).step_by(11) {
            bases[i] = bases[0];
        }
        assert_eq!(
            msm::<G1>(&bases, &scalars).unwrap(),
            naive::<G1>(&bases, &scalars).unwrap()
        );
        let zeros = vec![Scalar::ZERO; n];
        assert_eq!(msm::<G1>(&bases, &zeros).unwrap(), Group::identity());
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        let bases = random_bases::<G1>(3, 1);
        let err = msm::<G1>(&bases, &random_scalars(2, 1)).unwrap_err();
        assert!(
            matches!(
                err,
                MsmError::LengthMismatch {
                    bases: 3,
                    scalars: 2
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("3 bases but 2 scalars"));
    }
}
