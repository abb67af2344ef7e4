//! The one CPU MSM, on blst's multi-threaded Pippenger: the CPU reference prover's MSMs, the
//! engine CPU-only builds use, and the oracle the GPU engine is tested against (blst's
//! algorithm shares nothing with the GPU design: no signed digits, no sorting, no XYZZ).
//!
//! Witness scalars are mostly 0 or 1 in real circuits (bits, booleans), so each MSM first
//! sorts them out: zeros are skipped, bases with scalar one are summed with blst's batch
//! addition, and only the rest go through Pippenger. A query may also hold bases only for
//! the variables of a density bitmap (the A and B queries), so a [`Segment`] pairs each
//! selected scalar with the next base. [`msm`] is the same over blstrs points of either
//! group; [`naive`] is the plainest reference, for tests.

use crate::curve::MsmCurve;
use crate::MsmError;
use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine, MultiPoint};
use cuzk_field::PrimeCurveAffine as _;
use cuzk_field::{Bitmap, Field, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::Group;
use rayon::prelude::*;

/// Σ scalars[i]·bases[i] on the CPU, over blstrs points of group `C`.
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
    Ok(C::cpu_msm(bases, scalars))
}

/// Scalars per parallel gathering task; a multiple of 64 so that a task starts on a bitmap
/// word boundary and its first base index is a popcount of whole words.
const GATHER_CHUNK: usize = 64 * 64;

/// Bits of an Fr scalar (the modulus is below 2^255).
const SCALAR_BITS: usize = 255;

/// One run of scalars and the query bases that go with them.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a, A> {
    /// The bases: one per selected scalar, in order (more are allowed and ignored).
    pub bases: &'a [A],
    /// The scalars.
    pub scalars: &'a [Scalar],
    /// Which scalars have a base: all of them when `None`; otherwise bit `i` selects
    /// `scalars[i]`, which is then paired with the next unused base.
    pub density: Option<&'a Bitmap>,
}

impl<'a, A> Segment<'a, A> {
    /// A segment where every scalar has a base.
    pub fn dense(bases: &'a [A], scalars: &'a [Scalar]) -> Self {
        Segment {
            bases,
            scalars,
            density: None,
        }
    }

    /// A segment where only the scalars selected by `density` have a base.
    pub fn sparse(bases: &'a [A], scalars: &'a [Scalar], density: &'a Bitmap) -> Self {
        Segment {
            bases,
            scalars,
            density: Some(density),
        }
    }

    /// How many bases the segment uses.
    pub fn num_bases(&self) -> usize {
        self.density.map_or(self.scalars.len(), Bitmap::count_ones)
    }
}

/// `Σ scalar·base` over all segments, in G1.
///
/// Panics if a segment has fewer bases than selected scalars, or a density bitmap whose
/// length differs from its scalars'.
pub fn msm_g1(segments: &[Segment<'_, blst_p1_affine>]) -> G1Projective {
    let (pippenger, ones) = run(segments);
    g1_from_blst(pippenger) + g1_from_blst(ones)
}

/// `Σ scalar·base` over all segments, in G2. Panics as [`msm_g1`] does.
pub fn msm_g2(segments: &[Segment<'_, blst_p2_affine>]) -> G2Projective {
    let (pippenger, ones) = run(segments);
    g2_from_blst(pippenger) + g2_from_blst(ones)
}

/// `Σ scalars[i]·bases[i]` over blstrs points (converted on the fly: for small or one-off
/// MSMs such as the verifier's input commitment).
pub fn msm_g1_affine(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    let raw: Vec<blst_p1_affine> = bases.iter().map(|p| *p.as_ref()).collect();
    msm_g1(&[Segment::dense(&raw, scalars)])
}

/// `Σ scalars[i]·bases[i]` over blstrs G2 points.
pub fn msm_g2_affine(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
    let raw: Vec<blst_p2_affine> = bases.iter().map(|p| *p.as_ref()).collect();
    msm_g2(&[Segment::dense(&raw, scalars)])
}

/// Converts a blst projective G1 point to blstrs (same Jacobian coordinates).
pub fn g1_from_blst(p: blst_p1) -> G1Projective {
    G1Projective::from_raw_unchecked(Fp::from(p.x), Fp::from(p.y), Fp::from(p.z))
}

/// Converts a blst projective G2 point to blstrs.
pub fn g2_from_blst(p: blst_p2) -> G2Projective {
    G2Projective::from_raw_unchecked(Fp2::from(p.x), Fp2::from(p.y), Fp2::from(p.z))
}

/// Bases and scalars sorted by what the scalar needs.
struct Gathered<A> {
    /// Bases whose scalar is neither 0 nor 1.
    bases: Vec<A>,
    /// Their scalars, 32 little-endian canonical bytes each (blst's input format).
    scalars: Vec<u8>,
    /// Bases whose scalar is 1.
    ones: Vec<A>,
}

impl<A> Default for Gathered<A> {
    fn default() -> Self {
        Gathered {
            bases: Vec::new(),
            scalars: Vec::new(),
            ones: Vec::new(),
        }
    }
}

/// Returns (Pippenger part, sum of the bases with scalar one), as blst points.
fn run<A>(segments: &[Segment<'_, A>]) -> (<[A] as MultiPoint>::Output, <[A] as MultiPoint>::Output)
where
    A: Copy + Send + Sync,
    [A]: MultiPoint,
    <[A] as MultiPoint>::Output: Default,
{
    for seg in segments {
        if let Some(d) = seg.density {
            assert_eq!(
                d.len(),
                seg.scalars.len(),
                "density and scalars differ in length"
            );
        }
        assert!(
            seg.bases.len() >= seg.num_bases(),
            "fewer bases than selected scalars"
        );
    }

    // A single dense run of generic scalars (the H query) goes straight to Pippenger on
    // the query itself, with no copy of the bases.
    if let [seg @ Segment { density: None, .. }] = segments {
        let generic = seg
            .scalars
            .par_iter()
            .all(|s| !s.is_zero_vartime() && *s != Scalar::ONE);
        if generic {
            let bytes = scalar_bytes(seg.scalars);
            let out = pippenger(&seg.bases[..seg.scalars.len()], &bytes);
            return (out, Default::default());
        }
    }

    let mut all = Gathered::default();
    for seg in segments {
        gather(seg, &mut all);
    }
    let out = pippenger(&all.bases, &all.scalars);
    let ones = if all.ones.is_empty() {
        Default::default()
    } else {
        all.ones.as_slice().add()
    };
    (out, ones)
}

fn pippenger<A>(bases: &[A], scalars: &[u8]) -> <[A] as MultiPoint>::Output
where
    [A]: MultiPoint,
    <[A] as MultiPoint>::Output: Default,
{
    // blst indexes the first point unconditionally: an empty MSM is answered here.
    if bases.is_empty() {
        return Default::default();
    }
    bases.mult(scalars, SCALAR_BITS)
}

fn scalar_bytes(scalars: &[Scalar]) -> Vec<u8> {
    let mut out = vec![0u8; scalars.len() * 32];
    out.par_chunks_exact_mut(32)
        .zip(scalars.par_iter())
        .for_each(|(o, s)| o.copy_from_slice(&s.to_bytes_le()));
    out
}

/// Appends one segment's selected (base, scalar) pairs to `out`, sorted by scalar kind.
fn gather<A: Copy + Send + Sync>(seg: &Segment<'_, A>, out: &mut Gathered<A>) {
    const WORDS_PER_CHUNK: usize = GATHER_CHUNK / 64;
    let chunks = seg.scalars.len().div_ceil(GATHER_CHUNK);
    // Index of each chunk's first base: the selected scalars before it.
    let first_base: Vec<usize> = match seg.density {
        None => (0..chunks).map(|c| c * GATHER_CHUNK).collect(),
        Some(d) => {
            let words = d.words();
            let mut before = 0usize;
            (0..chunks)
                .map(|c| {
                    let start = before;
                    let lo = (c * WORDS_PER_CHUNK).min(words.len());
                    let hi = ((c + 1) * WORDS_PER_CHUNK).min(words.len());
                    before += words[lo..hi]
                        .iter()
                        .map(|w| w.count_ones() as usize)
                        .sum::<usize>();
                    start
                })
                .collect()
        }
    };

    let parts: Vec<Gathered<A>> = seg
        .scalars
        .par_chunks(GATHER_CHUNK)
        .zip(first_base.par_iter())
        .enumerate()
        .map(|(c, (scalars, &first))| {
            let mut part = Gathered::default();
            let mut next = first;
            for (i, s) in scalars.iter().enumerate() {
                if let Some(d) = seg.density {
                    if !d.get(c * GATHER_CHUNK + i) {
                        continue;
                    }
                }
                let base = seg.bases[next];
                next += 1;
                if s.is_zero_vartime() {
                    continue;
                }
                if *s == Scalar::ONE {
                    part.ones.push(base);
                } else {
                    part.bases.push(base);
                    part.scalars.extend_from_slice(&s.to_bytes_le());
                }
            }
            part
        })
        .collect();

    for part in parts {
        out.bases.extend_from_slice(&part.bases);
        out.scalars.extend_from_slice(&part.scalars);
        out.ones.extend_from_slice(&part.ones);
    }
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

    // The blst path: witness-like scalars, density segments, G2, extra bases.

    use cuzk_field::{Curve, G2Projective, Group};
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Scalars mixing zeros, ones and random values, like a witness.
    fn witness_like(n: usize, rng: &mut ChaCha8Rng) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.next_u32() % 4 {
                0 => Scalar::ZERO,
                1 => Scalar::ONE,
                2 => -Scalar::ONE,
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    fn random_g1(n: usize, rng: &mut ChaCha8Rng) -> Vec<G1Affine> {
        (0..n)
            .map(|_| G1Projective::random(&mut *rng).to_affine())
            .collect()
    }

    fn naive_g1(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        bases.iter().zip(scalars).map(|(b, s)| b * s).sum()
    }

    #[test]
    fn dense_g1_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [0usize, 1, 5, 40, 300] {
            let bases = random_g1(n, &mut rng);
            let scalars = witness_like(n, &mut rng);
            assert_eq!(
                msm_g1_affine(&bases, &scalars),
                naive_g1(&bases, &scalars),
                "n = {n}"
            );
            let generic: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            assert_eq!(msm_g1_affine(&bases, &generic), naive_g1(&bases, &generic));
        }
    }

    #[test]
    fn sparse_segments_pair_selected_scalars_with_consecutive_bases() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        // Long enough to span several gathering chunks.
        let n = GATHER_CHUNK * 2 + 77;
        let scalars = witness_like(n, &mut rng);
        let mut density = Bitmap::new(n);
        let mut selected = Vec::new();
        for i in 0..n {
            if rng.next_u32() % 3 == 0 {
                density.set(i);
                selected.push(scalars[i]);
            }
        }
        let bases = random_g1(selected.len(), &mut rng);
        let raw: Vec<blst_p1_affine> = bases.iter().map(|p| *p.as_ref()).collect();
        let head_scalars = witness_like(3, &mut rng);
        let head = random_g1(3, &mut rng);
        let raw_head: Vec<blst_p1_affine> = head.iter().map(|p| *p.as_ref()).collect();

        let got = msm_g1(&[
            Segment::dense(&raw_head, &head_scalars),
            Segment::sparse(&raw, &scalars, &density),
        ]);
        let want = naive_g1(&head, &head_scalars) + naive_g1(&bases, &selected);
        assert_eq!(got, want);
    }

    #[test]
    fn g2_matches_naive() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let n = 70;
        let bases: Vec<G2Affine> = (0..n)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let scalars = witness_like(n, &mut rng);
        let want: G2Projective = bases.iter().zip(&scalars).map(|(b, s)| b * s).sum();
        assert_eq!(msm_g2_affine(&bases, &scalars), want);
    }

    #[test]
    fn extra_bases_are_ignored() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let bases = random_g1(10, &mut rng);
        let scalars: Vec<Scalar> = (0..6).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(
            msm_g1_affine(&bases, &scalars),
            naive_g1(&bases[..6], &scalars)
        );
    }
}
