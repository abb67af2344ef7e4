//! Parallel helpers over Fr vectors: powers of an element.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
