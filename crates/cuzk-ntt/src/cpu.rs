//! CPU reference transforms over Fr: radix-2 NTTs on bellperson's domain, natural order in and out.
//!
//! This module is the oracle the GPU engine is tested against, so it is written to be obviously
//! right rather than fast: one bit-reversal, then textbook Cooley–Tukey stages with a table of
//! powers of ω, parallel over butterflies with rayon. It shares no code with the GPU planner.
#![forbid(unsafe_code)]

use crate::NttError;
use cuzk_field::consts::{root_of_unity, COSET_GENERATOR, FR_TWO_ADICITY};
use cuzk_field::{Field, Scalar};
use rayon::prelude::*;

/// Below this many butterflies per block a stage runs its blocks in parallel, above it the
/// butterflies inside each block: either way rayon gets enough pieces to share out.
const PAR_INNER: usize = 1 << 12;

/// An evaluation domain `⟨ω⟩` of size `n = 2^log_n` with bellperson's root of unity and coset
/// generator `g = 7`.
#[derive(Clone, Debug)]
pub struct Domain {
    log_n: u32,
    omega: Scalar,
    omega_inv: Scalar,
    n_inv: Scalar,
    g: Scalar,
    g_inv: Scalar,
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
            omega_inv: omega.invert().unwrap(),
            n_inv: n.invert().unwrap(),
            g: COSET_GENERATOR,
            g_inv: COSET_GENERATOR.invert().unwrap(),
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
        self.g.pow_vartime([self.size() as u64]) - Scalar::ONE
    }

    /// Coefficients to evaluations: `v[k] ← Σ v[i]·ω^(ik)`.
    pub fn ntt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        transform(v, self.omega);
        Ok(())
    }

    /// Evaluations to coefficients, the inverse of [`Domain::ntt`].
    pub fn intt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        transform(v, self.omega_inv);
        scale_by_powers(v, self.n_inv, Scalar::ONE);
        Ok(())
    }

    /// Coefficients to evaluations on the coset `g·⟨ω⟩`: `v[k] ← Σ v[i]·(g·ω^k)^i`.
    pub fn coset_ntt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        scale_by_powers(v, Scalar::ONE, self.g);
        transform(v, self.omega);
        Ok(())
    }

    /// Evaluations on the coset to coefficients, the inverse of [`Domain::coset_ntt`].
    pub fn coset_intt(&self, v: &mut [Scalar]) -> Result<(), NttError> {
        self.check(v)?;
        transform(v, self.omega_inv);
        scale_by_powers(v, self.n_inv, self.g_inv);
        Ok(())
    }

    /// The Groth16 quotient step on evaluations over the domain: with `a, b, c` the evaluations of
    /// polynomials A, B, C, returns the coefficients of `H = (A·B − C)/Z` computed on the coset,
    /// written into `a` (`b` and `c` are left as their coset evaluations).
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
        for v in [&mut *a, &mut *b, &mut *c] {
            self.intt(v)?;
            self.coset_ntt(v)?;
        }
        let z_inv = self.vanishing_on_coset().invert().unwrap();
        a.par_iter_mut()
            .zip(b.par_iter())
            .zip(c.par_iter())
            .for_each(|((a, b), c)| *a = (*a * b - c) * z_inv);
        self.coset_intt(a)
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

/// In-place transform with root `w` of order `v.len()`: `v[k] ← Σ v[i]·w^(ik)`.
fn transform(v: &mut [Scalar], w: Scalar) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    bit_reverse_permute(v);
    // powers[j] = w^j for j < n/2; the stage with half-size h uses w_(2h)^j = w^(j·n/(2h)).
    let powers = powers_of(w, n / 2);
    let mut half = 1;
    while half < n {
        let stride = n / (2 * half);
        let butterfly = |j: usize, x: &mut Scalar, y: &mut Scalar| {
            let t = *y * powers[j * stride];
            *y = *x - t;
            *x += t;
        };
        if half < PAR_INNER {
            v.par_chunks_mut(2 * half).for_each(|block| {
                let (lo, hi) = block.split_at_mut(half);
                for (j, (x, y)) in lo.iter_mut().zip(hi).enumerate() {
                    butterfly(j, x, y);
                }
            });
        } else {
            for block in v.chunks_mut(2 * half) {
                let (lo, hi) = block.split_at_mut(half);
                lo.par_iter_mut()
                    .zip(hi.par_iter_mut())
                    .enumerate()
                    .for_each(|(j, (x, y))| butterfly(j, x, y));
            }
        }
        half *= 2;
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
