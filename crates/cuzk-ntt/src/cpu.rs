//! The CPU transforms over Fr: radix-2 NTTs on bellperson's domain, natural order in and out.
//! The one CPU implementation: the CPU reference prover's H step runs on it, and it is the
//! oracle the GPU engine is tested against (itself tested against the naive DFT).
//!
//! An iterative decimation-in-time transform: a bit-reversal permutation, then the small
//! butterfly stages inside cache-sized blocks, then the large stages across the whole
//! vector, reading a twiddle tree built once per domain. The inverse reuses the forward
//! transform (`intt(x)[k] = ntt(x)[(n − k) mod n] / n`), and the scalings of the H step (by
//! `1/n`, the coset powers, `1/Z`) are fused into the pass that follows each transform.
#![forbid(unsafe_code)]

use crate::NttError;
use cuzk_field::consts::{root_of_unity, COSET_GENERATOR, FR_TWO_ADICITY};
use cuzk_field::{Field, Scalar};
use rayon::prelude::*;
use std::sync::OnceLock;

/// log2 of the block whose stages run inside one task: 2^11 elements (64 KiB) stay in cache.
const LOCAL_LOG: u32 = 11;
/// Fewest butterflies one task takes in a large stage.
const MIN_BUTTERFLIES: usize = 1 << 10;

/// An evaluation domain `⟨ω⟩` of size `n = 2^log_n` with bellperson's root of unity and coset
/// generator `g = 7`.
#[derive(Clone, Debug)]
pub struct Domain {
    log_n: u32,
    omega: Scalar,
    n_inv: Scalar,
    g: Scalar,
    g_inv: Scalar,
    /// `tree[m + j] = ω_{2m}^j` for every half-size `m = 1, 2, 4, … n/2` and `j < m`, so
    /// each stage reads a contiguous run (index 0 unused); built on the first transform.
    tree: OnceLock<Vec<Scalar>>,
}

impl Domain {
    /// The domain of size `2^log_n`, for `log_n` up to Fr's two-adicity (32).
    pub fn new(log_n: u32) -> Result<Self, NttError> {
        let omega = root_of_unity(log_n).ok_or(NttError::TooLarge {
            log_n,
            max: FR_TWO_ADICITY,
        })?;
        let n = Scalar::from(1u64 << log_n);
        Ok(Domain {
            log_n,
            omega,
            n_inv: n.invert().unwrap(),
            g: COSET_GENERATOR,
            g_inv: COSET_GENERATOR.invert().unwrap(),
            tree: OnceLock::new(),
        })
    }

    /// The domain whose size is `len`, which must be a power of two.
    pub fn for_len(len: usize) -> Result<Self, NttError> {
        Self::new(log2_exact(len)?)
    }

    /// log2 of the domain size.
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// The domain size.
    pub fn size(&self) -> usize {
        1usize << self.log_n
    }

    /// The generator ω of the domain.
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    /// The coset generator g.
    pub fn coset_generator(&self) -> Scalar {
        self.g
    }

    /// `Z(g·x) = g^n − 1` for every x in the domain: the vanishing polynomial on the coset.
    pub fn vanishing_on_coset(&self) -> Scalar {
        self.vanishing_at(self.g)
    }

    /// The vanishing polynomial `Z(x) = xⁿ − 1` at `x`.
    pub fn vanishing_at(&self, x: Scalar) -> Scalar {
        x.pow_vartime([self.size() as u64]) - Scalar::ONE
    }

    /// Coefficients to evaluations: `v[k] ← Σ v[i]·ω^(ik)`.
    pub fn ntt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        self.forward(v);
        Ok(())
    }

    /// Evaluations to coefficients, the inverse of [`Domain::ntt`].
    pub fn intt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.intt_scaled(v, self.n_inv, Scalar::ONE)
    }

    /// Coefficients to evaluations on the coset `g·⟨ω⟩`: `v[k] ← Σ v[i]·(g·ω^k)^i`.
    pub fn coset_ntt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        scale_by_powers(v, Scalar::ONE, self.g);
        self.forward(v);
        Ok(())
    }

    /// Evaluations on the coset to coefficients, the inverse of [`Domain::coset_ntt`].
    pub fn coset_intt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.intt_scaled(v, self.n_inv, self.g_inv)
    }

    /// The unnormalised inverse transform with a scaling fused into its last pass:
    /// `v[i] ← start·stepⁱ·Σⱼ v[j]·ω^(−ij)`. With `start = 1/n` and `step = 1` it is
    /// [`Domain::intt`]; `step = g⁻¹`, [`Domain::coset_intt`]; `step = g` interpolates and
    /// scales for [`Domain::coset_ntt`]'s forward pass in one.
    pub fn intt_scaled(
        &self,
        v: &mut [Scalar],
        start: Scalar,
        step: Scalar,
    ) -> Result<(), NttError> {
        self.check(v)?;
        self.forward(v);
        // ntt(v)[n − k] is n·intt(v)[k]: reversing indices 1..n turns one into the other.
        v[1..].reverse();
        scale_by_powers(v, start, step);
        Ok(())
    }

    /// The Groth16 quotient step on evaluations over the domain: with `a, b, c` the evaluations of
    /// polynomials A, B, C, returns the coefficients of `H = (A·B − C)/Z` computed on the coset,
    /// written into `a` (`b` and `c` are left as their coset evaluations). The three vectors
    /// go to the coset in parallel, each in two passes (interpolation fused with the coset
    /// scaling, then the forward transform).
    pub fn h_quotient(
        &self,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), NttError> {
        for (index, v) in [&*a, &*b, &*c].into_iter().enumerate() {
            if v.len() != self.size() {
                return Err(NttError::LengthMismatch {
                    index,
                    expected: self.size(),
                    got: v.len(),
                });
            }
        }
        let to_coset = |v: &mut [Scalar]| {
            // Lengths checked above.
            let _ = self.intt_scaled(v, self.n_inv, self.g);
            self.forward(v);
        };
        rayon::join(
            || to_coset(a),
            || rayon::join(|| to_coset(b), || to_coset(c)),
        );
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .for_each(|((a, b), c)| *a = *a * b - c);
        let z_inv = self.vanishing_on_coset().invert().unwrap();
        self.intt_scaled(a, self.n_inv * z_inv, self.g_inv)
    }

    /// The forward transform, `v.len()` checked by the caller.
    fn forward(&self, v: &mut [Scalar]) {
        let n = self.size();
        if n == 1 {
            return;
        }
        let tree = self.tree();
        bit_reverse_permute(v);
        let local = 1usize << self.log_n.min(LOCAL_LOG);
        v.par_chunks_mut(local).for_each(|block| {
            let mut m = 1;
            while m < local {
                for pair in block.chunks_mut(2 * m) {
                    let (lo, hi) = pair.split_at_mut(m);
                    butterflies(lo, hi, &tree[m..2 * m]);
                }
                m *= 2;
            }
        });
        let mut m = local;
        while m < n {
            let tw = &tree[m..2 * m];
            v.par_chunks_mut(2 * m).for_each(|pair| {
                let (lo, hi) = pair.split_at_mut(m);
                lo.par_chunks_mut(MIN_BUTTERFLIES)
                    .zip(hi.par_chunks_mut(MIN_BUTTERFLIES))
                    .zip(tw.par_chunks(MIN_BUTTERFLIES))
                    .for_each(|((lo, hi), tw)| butterflies(lo, hi, tw));
            });
            m *= 2;
        }
    }

    /// The twiddle tree, built on first use (a table of the domain's size).
    fn tree(&self) -> &[Scalar] {
        self.tree.get_or_init(|| {
            let n = self.size();
            let mut tree = vec![Scalar::ZERO; n.max(1)];
            if n > 1 {
                let half = n / 2;
                tree[half..].copy_from_slice(&powers_of(self.omega, half));
                // Level m holds ω_{2m}^j = ω_{4m}^{2j}: every other entry of level 2m.
                let mut m = half / 2;
                while m >= 1 {
                    let (lower, upper) = tree.split_at_mut(2 * m);
                    let level = &mut lower[m..];
                    let above = &upper[..2 * m];
                    level
                        .par_iter_mut()
                        .with_min_len(MIN_BUTTERFLIES)
                        .enumerate()
                        .for_each(|(j, t)| *t = above[2 * j]);
                    m /= 2;
                }
            }
            tree
        })
    }

    fn check(&self, v: &[Scalar]) -> Result<(), NttError> {
        if v.len() != self.size() {
            return Err(NttError::LengthMismatch {
                index: 0,
                expected: self.size(),
                got: v.len(),
            });
        }
        Ok(())
    }
}

/// `log2(len)` when `len` is a power of two.
pub fn log2_exact(len: usize) -> Result<u32, NttError> {
    if !len.is_power_of_two() {
        return Err(NttError::NotPowerOfTwo { len });
    }
    Ok(len.trailing_zeros())
}

/// The DFT by its definition, `out[k] = Σ input[i]·root^(ik)`, in O(n²): the test oracle for the
/// fast transforms.
pub fn naive_dft(input: &[Scalar], root: Scalar) -> Vec<Scalar> {
    let n = input.len();
    (0..n)
        .into_par_iter()
        .map(|k| {
            let step = root.pow_vartime([k as u64]);
            let mut x = Scalar::ONE;
            let mut acc = Scalar::ZERO;
            for v in input {
                acc += *v * x;
                x *= step;
            }
            acc
        })
        .collect()
}

/// `Σ coeffs[i]·x^i`, split into parallel Horner runs: checks single outputs of transforms that
/// are too large to recompute in full on the CPU.
pub fn evaluate(coeffs: &[Scalar], x: Scalar) -> Scalar {
    const CHUNK: usize = 1 << 16;
    let x_chunk = x.pow_vartime([CHUNK as u64]);
    let partial: Vec<Scalar> = coeffs
        .par_chunks(CHUNK)
        .map(|chunk| chunk.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c))
        .collect();
    // Chunk j starts at degree j·CHUNK.
    partial
        .iter()
        .rev()
        .fold(Scalar::ZERO, |acc, p| acc * x_chunk + p)
}

#[inline]
fn butterflies(lo: &mut [Scalar], hi: &mut [Scalar], tw: &[Scalar]) {
    for ((x, y), w) in lo.iter_mut().zip(hi.iter_mut()).zip(tw) {
        let t = *y * w;
        *y = *x - t;
        *x += t;
    }
}

/// `[1, w, w², …]`, `count` entries, built in parallel blocks.
fn powers_of(w: Scalar, count: usize) -> Vec<Scalar> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![Scalar::ZERO; count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(j, chunk)| {
            let mut x = w.pow_vartime([(j * CHUNK) as u64]);
            for slot in chunk {
                *slot = x;
                x *= w;
            }
        });
    out
}

/// `v[i] ← v[i]·start·step^i`.
fn scale_by_powers(v: &mut [Scalar], start: Scalar, step: Scalar) {
    const CHUNK: usize = 1 << 12;
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(j, chunk)| {
        let mut x = start * step.pow_vartime([(j * CHUNK) as u64]);
        for slot in chunk {
            *slot *= x;
            x *= step;
        }
    });
}

/// Swaps `v[i]` and `v[rev(i)]`, where `rev` reverses the low `log2(v.len())` bits.
pub fn bit_reverse_permute<T>(v: &mut [T]) {
    let n = v.len();
    if n <= 2 {
        return;
    }
    let shift = usize::BITS - n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> shift;
        if i < j {
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn random_vec(seed: u64, n: usize) -> Vec<Scalar> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    #[test]
    fn ntt_matches_naive_dft_for_every_small_size() {
        for log_n in 0..=9 {
            let seed = 1000 + log_n as u64;
            let d = Domain::new(log_n).unwrap();
            let input = random_vec(seed, d.size());
            let mut v = input.clone();
            d.ntt(&mut v).unwrap();
            assert_eq!(
                v,
                naive_dft(&input, d.omega()),
                "log_n {log_n}, seed {seed}"
            );
        }
    }

    #[test]
    fn intt_inverts_ntt() {
        for log_n in [0, 1, 2, 5, 13, 14] {
            let seed = 2000 + log_n as u64;
            let d = Domain::new(log_n).unwrap();
            let input = random_vec(seed, d.size());
            let mut v = input.clone();
            d.ntt(&mut v).unwrap();
            d.intt(&mut v).unwrap();
            assert_eq!(v, input, "log_n {log_n}, seed {seed}");
        }
    }

    #[test]
    fn coset_ntt_evaluates_on_the_coset() {
        for log_n in [1, 3, 6, 8] {
            let seed = 3000 + log_n as u64;
            let d = Domain::new(log_n).unwrap();
            let input = random_vec(seed, d.size());
            let mut v = input.clone();
            d.coset_ntt(&mut v).unwrap();
            for (k, got) in v.iter().enumerate() {
                let x = d.coset_generator() * d.omega().pow_vartime([k as u64]);
                assert_eq!(
                    *got,
                    evaluate(&input, x),
                    "log_n {log_n}, k {k}, seed {seed}"
                );
            }
            d.coset_intt(&mut v).unwrap();
            assert_eq!(v, input, "log_n {log_n}, seed {seed}");
        }
    }

    #[test]
    fn evaluate_matches_naive_dft_across_chunks() {
        // Long enough to span several Horner chunks.
        let d = Domain::new(17).unwrap();
        let input = random_vec(4000, d.size());
        let mut v = input.clone();
        d.ntt(&mut v).unwrap();
        for k in [0usize, 1, 77_777, d.size() - 1] {
            assert_eq!(
                v[k],
                evaluate(&input, d.omega().pow_vartime([k as u64])),
                "k {k}"
            );
        }
    }

    #[test]
    fn h_quotient_divides_exactly_when_c_is_a_times_b() {
        // With C = A∘B on the domain, A·B − C vanishes there, so H·Z = A·B − C as polynomials.
        let d = Domain::new(7).unwrap();
        let a_evals = random_vec(5000, d.size());
        let b_evals = random_vec(5001, d.size());
        let c_evals: Vec<Scalar> = a_evals.iter().zip(&b_evals).map(|(a, b)| *a * b).collect();
        let (mut a, mut b, mut c) = (a_evals.clone(), b_evals.clone(), c_evals.clone());
        d.h_quotient(&mut a, &mut b, &mut c).unwrap();
        let h = a;
        assert!(
            h[d.size() - 1].is_zero_vartime(),
            "H has degree below n − 1"
        );
        let coeffs = |evals: &[Scalar]| {
            let mut v = evals.to_vec();
            d.intt(&mut v).unwrap();
            v
        };
        let (pa, pb, pc) = (coeffs(&a_evals), coeffs(&b_evals), coeffs(&c_evals));
        let tau = Scalar::from(0x1234_5678_9abc_u64);
        let z = tau.pow_vartime([d.size() as u64]) - Scalar::ONE;
        let lhs = evaluate(&h, tau) * z;
        let rhs = evaluate(&pa, tau) * evaluate(&pb, tau) - evaluate(&pc, tau);
        assert_eq!(lhs, rhs);
    }

    #[test]
    fn the_fused_inverse_scales_and_the_vanishing_polynomial_vanishes_on_the_domain() {
        let d = Domain::new(12).unwrap();
        let input = random_vec(6000, d.size());
        let (start, step) = (Scalar::from(5u64), Scalar::from(3u64));
        let mut fused = input.clone();
        d.intt_scaled(&mut fused, start * d.n_inv, step).unwrap();
        let mut plain = input;
        d.intt(&mut plain).unwrap();
        scale_by_powers(&mut plain, start, step);
        assert_eq!(fused, plain);
        assert_eq!(d.vanishing_at(d.omega().pow_vartime([3u64])), Scalar::ZERO);
        assert_ne!(d.vanishing_on_coset(), Scalar::ZERO);
    }

    #[test]
    fn bad_lengths_are_named() {
        assert!(matches!(
            Domain::for_len(12),
            Err(NttError::NotPowerOfTwo { len: 12 })
        ));
        assert!(matches!(
            Domain::new(33),
            Err(NttError::TooLarge { log_n: 33, max: 32 })
        ));
        let d = Domain::new(3).unwrap();
        let mut v = vec![Scalar::ONE; 4];
        assert!(matches!(
            d.ntt(&mut v),
            Err(NttError::LengthMismatch {
                expected: 8,
                got: 4,
                ..
            })
        ));
    }

    #[test]
    fn bit_reversal_is_an_involution() {
        let mut v: Vec<usize> = (0..64).collect();
        bit_reverse_permute(&mut v);
        assert_eq!(v[1], 32);
        assert_eq!(v[6], 24);
        bit_reverse_permute(&mut v);
        assert_eq!(v, (0..64).collect::<Vec<_>>());
    }
}
