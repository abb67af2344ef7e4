//! Parallel helpers over Fr vectors: powers of an element and batch inversion.

use cuzk_field::{Field, Scalar};
use rayon::prelude::*;

/// Elements per parallel task: big enough that a task's setup (one exponentiation or
/// inversion) is noise, small enough to balance across cores.
pub(crate) const CHUNK: usize = 1 << 12;

/// Multiplies `v[i]` by `start · g^i`, in parallel.
pub(crate) fn scale_by_powers(v: &mut [Scalar], start: Scalar, g: Scalar) {
    v.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
        let mut power = start * g.pow_vartime([(k * CHUNK) as u64]);
        for x in chunk {
            *x *= power;
            power *= g;
        }
    });
}

/// `[start, start·g, start·g², …]` of length `n`, in parallel.
pub(crate) fn powers(n: usize, start: Scalar, g: Scalar) -> Vec<Scalar> {
    let mut v = vec![Scalar::ONE; n];
    scale_by_powers(&mut v, start, g);
    v
}

/// Inverts every element in place (Montgomery's trick per chunk, chunks in parallel).
/// Returns false, leaving `v` unspecified, if some element is zero.
pub(crate) fn batch_invert(v: &mut [Scalar]) -> bool {
    v.par_chunks_mut(CHUNK).all(|chunk| {
        let mut prefix = Vec::with_capacity(chunk.len());
        let mut acc = Scalar::ONE;
        for x in chunk.iter() {
            prefix.push(acc);
            acc *= x;
        }
        let Some(mut inv) = Option::<Scalar>::from(acc.invert()) else {
            return false;
        };
        for (x, before) in chunk.iter_mut().zip(prefix).rev() {
            let x_inv = inv * before;
            inv *= *x;
            *x = x_inv;
        }
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn powers_match_repeated_multiplication() {
        let g = Scalar::from(5u64);
        let v = powers(3 * CHUNK + 7, Scalar::from(3u64), g);
        let mut want = Scalar::from(3u64);
        for x in &v {
            assert_eq!(*x, want);
            want *= g;
        }
    }

    #[test]
    fn batch_invert_inverts_and_detects_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let orig: Vec<Scalar> = (0..CHUNK + 5).map(|_| Scalar::random(&mut rng)).collect();
        let mut v = orig.clone();
        assert!(batch_invert(&mut v));
        for (x, y) in orig.iter().zip(&v) {
            assert_eq!(*x * y, Scalar::ONE);
        }
        let mut v = orig;
        v[CHUNK + 2] = Scalar::ZERO;
        assert!(!batch_invert(&mut v));
    }
}
