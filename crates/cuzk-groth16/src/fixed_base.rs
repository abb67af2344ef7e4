//! Fixed-base scalar multiplication for the parameter generator: many scalars times one
//! generator, from a precomputed table of signed-window multiples.
//!
//! With window width `c` the table holds `d·2^{c·w}·G` for `d = 1..=2^{c-1}` and every
//! window `w`; a scalar recoded into signed base-`2^c` digits then costs one mixed addition
//! per window and no doublings. `c` is picked from the number of scalars, trading table
//! size against additions per scalar.

use blst::{blst_p1, blst_p2, p1_affines, p2_affines};
use cuzk_field::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Group, Scalar};
use rayon::prelude::*;
use std::ops::{AddAssign, SubAssign};

/// Widest window: a 2^15-entry table per window (100 MB over all G2 windows) is plenty.
const MAX_WINDOW: usize = 16;
/// Scalars per parallel task.
const CHUNK: usize = 1 << 10;
/// Scalars multiplied (and batch-normalised) together.
const BATCH: usize = 1 << 20;

/// A projective curve type whose affine points can be batch-normalised in blst.
pub(crate) trait FixedBaseCurve:
    Group<Scalar = Scalar>
    + Send
    + Sync
    + for<'a> AddAssign<&'a Self::Affine>
    + for<'a> SubAssign<&'a Self::Affine>
{
    /// The affine point type.
    type Affine: Copy + Send + Sync;

    /// Converts to affine with one field inversion per batch (blst, multi-threaded).
    /// No point may be the identity.
    fn batch_to_affine(points: &[Self]) -> Vec<Self::Affine>;
}

impl FixedBaseCurve for G1Projective {
    type Affine = G1Affine;

    fn batch_to_affine(points: &[Self]) -> Vec<G1Affine> {
        if points.is_empty() {
            return Vec::new();
        }
        let raw: Vec<blst_p1> = points.par_iter().map(|p| *p.as_ref()).collect();
        let affine = p1_affines::from(&raw);
        affine
            .as_slice()
            .par_iter()
            .map(|p| G1Affine::from_raw_unchecked(Fp::from(p.x), Fp::from(p.y), false))
            .collect()
    }
}

impl FixedBaseCurve for G2Projective {
    type Affine = G2Affine;

    fn batch_to_affine(points: &[Self]) -> Vec<G2Affine> {
        if points.is_empty() {
            return Vec::new();
        }
        let raw: Vec<blst_p2> = points.par_iter().map(|p| *p.as_ref()).collect();
        let affine = p2_affines::from(&raw);
        affine
            .as_slice()
            .par_iter()
            .map(|p| G2Affine::from_raw_unchecked(Fp2::from(p.x), Fp2::from(p.y), false))
            .collect()
    }
}

/// A signed-window table of one base point.
pub(crate) struct FixedBase<C: FixedBaseCurve> {
    /// Window width in bits.
    c: usize,
    /// `table[w·half + d − 1] = d·2^{c·w}·G`.
    table: Vec<C::Affine>,
}

impl<C: FixedBaseCurve> FixedBase<C> {
    /// Builds the table for `base`, sized for about `num_scalars` multiplications.
    pub(crate) fn new(base: C, num_scalars: usize) -> Self {
        let c = best_window(num_scalars);
        let half = 1usize << (c - 1);
        let windows = num_windows(c);
        let mut window_bases = Vec::with_capacity(windows);
        let mut b = base;
        for _ in 0..windows {
            window_bases.push(b);
            for _ in 0..c {
                b = b.double();
            }
        }
        let projective: Vec<C> = window_bases
            .par_iter()
            .flat_map_iter(|wb| {
                let wb = *wb;
                let mut acc = wb;
                (0..half).map(move |_| {
                    let out = acc;
                    acc += wb;
                    out
                })
            })
            .collect();
        FixedBase {
            c,
            table: C::batch_to_affine(&projective),
        }
    }

    /// `s·G` in projective form.
    pub(crate) fn mul(&self, s: &Scalar) -> C {
        let half = 1usize << (self.c - 1);
        let mut acc = C::identity();
        for (w, d) in signed_digits(s, self.c).enumerate() {
            if d > 0 {
                acc += &self.table[w * half + d as usize - 1];
            } else if d < 0 {
                acc -= &self.table[w * half + (-d) as usize - 1];
            }
        }
        acc
    }

    /// `s·G` for every scalar, in affine form. No scalar may be zero.
    ///
    /// Works through the scalars in batches, so the projective intermediates never take
    /// more than one batch of memory.
    pub(crate) fn mul_many(&self, scalars: &[Scalar]) -> Vec<C::Affine> {
        let mut out = Vec::with_capacity(scalars.len());
        for batch in scalars.chunks(BATCH) {
            let projective: Vec<C> = batch
                .par_iter()
                .with_min_len(CHUNK)
                .map(|s| self.mul(s))
                .collect();
            out.extend(C::batch_to_affine(&projective));
        }
        out
    }
}

/// Windows needed to cover 256 bits (a 255-bit scalar plus the recoding carry).
fn num_windows(c: usize) -> usize {
    256usize.div_ceil(c)
}

/// The window width minimising table building plus per-scalar additions.
fn best_window(num_scalars: usize) -> usize {
    (2..=MAX_WINDOW)
        .min_by_key(|&c| {
            let w = num_windows(c);
            // A table entry costs about two additions (one to build, one to normalise).
            num_scalars.max(1) * w + 2 * w * (1usize << (c - 1))
        })
        .expect("non-empty range")
}

/// The digits `d_w ∈ (−2^{c−1}, 2^{c−1}]` with `s = Σ d_w·2^{c·w}`, lowest first.
fn signed_digits(s: &Scalar, c: usize) -> impl Iterator<Item = i64> {
    let bytes = s.to_bytes_le();
    let mut limbs = [0u64; 4];
    for (l, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
        *l = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
    }
    let half = 1i64 << (c - 1);
    let mut carry = 0i64;
    (0..num_windows(c)).map(move |w| {
        let raw = window_bits(&limbs, w * c, c) as i64 + carry;
        if raw > half {
            carry = 1;
            raw - (half << 1)
        } else {
            carry = 0;
            raw
        }
    })
}

/// Bits `[lo, lo + c)` of a 256-bit little-endian number (zero beyond bit 255); `c ≤ 16`.
fn window_bits(limbs: &[u64; 4], lo: usize, c: usize) -> u64 {
    let (limb, shift) = (lo / 64, lo % 64);
    if limb >= 4 {
        return 0;
    }
    let mut v = limbs[limb] >> shift;
    if shift + c > 64 && limb + 1 < 4 {
        v |= limbs[limb + 1] << (64 - shift);
    }
    v & ((1u64 << c) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_field::{Curve, Field};
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn digits_recompose_the_scalar() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut scalars: Vec<Scalar> = (0..20).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ONE, -Scalar::ONE, Scalar::from(u64::MAX)]);
        for c in [2, 3, 7, 8, 13, 16] {
            let radix = Scalar::from(1u64 << c);
            for s in &scalars {
                let mut acc = Scalar::ZERO;
                let mut weight = Scalar::ONE;
                for d in signed_digits(s, c) {
                    assert!(d > -(1 << (c - 1)) && d <= 1 << (c - 1));
                    let term = Scalar::from(d.unsigned_abs());
                    acc += if d < 0 { -term * weight } else { term * weight };
                    weight *= radix;
                }
                assert_eq!(acc, *s, "c = {c}");
            }
        }
    }

    #[test]
    fn table_multiplication_matches_scalar_multiplication() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let g1 = G1Projective::random(&mut rng);
        let g2 = G2Projective::random(&mut rng);
        let scalars: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
        for n in [1usize, 50, 1 << 16] {
            let t1 = FixedBase::new(g1, n);
            assert_eq!(
                t1.mul_many(&scalars),
                scalars
                    .iter()
                    .map(|s| (g1 * s).to_affine())
                    .collect::<Vec<_>>()
            );
        }
        let t2 = FixedBase::new(g2, 50);
        assert_eq!(
            t2.mul_many(&scalars),
            scalars
                .iter()
                .map(|s| (g2 * s).to_affine())
                .collect::<Vec<_>>()
        );
        assert!(bool::from(t2.mul(&Scalar::ZERO).is_identity()));
    }

    #[test]
    fn window_grows_with_the_batch() {
        assert!(best_window(1) <= best_window(1000));
        assert!(best_window(1000) <= best_window(1 << 22));
        assert!(best_window(1 << 30) <= MAX_WINDOW);
    }
}
