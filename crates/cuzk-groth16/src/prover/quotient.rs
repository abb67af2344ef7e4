//! The quotient polynomial `H = (A·B − C)/Z` of one witness, via FFTs over Fr.
//!
//! A, B, C are given by their evaluations on the domain (the a, b, c vectors). They are
//! interpolated, evaluated on the coset `g·⟨ω⟩` (g = 7, bellperson's generator) where Z is
//! the non-zero constant `g^n − 1`, combined pointwise and interpolated back. The scalings
//! by `1/n`, by the coset powers and by `1/Z(g)` are fused into the passes that follow the
//! transforms.

use crate::domain::Domain;
use cuzk_field::consts::COSET_GENERATOR;
use cuzk_field::{Field, Scalar};
use rayon::prelude::*;

/// H's `n − 1` coefficients, where `n` is the domain size. The witness must satisfy every
/// row (`a·b = c`), or the division is not exact and the result is meaningless.
pub(crate) fn quotient(
    domain: &Domain,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Vec<Scalar> {
    let n = domain.size();
    let g = COSET_GENERATOR;
    for v in [&mut a, &mut b, &mut c] {
        v.resize(n, Scalar::ZERO);
    }
    let to_coset = |v: &mut Vec<Scalar>| {
        domain.ifft_then_scale(v, domain.size_inv(), g);
        domain.fft_unscaled(v);
    };
    rayon::join(
        || to_coset(&mut a),
        || rayon::join(|| to_coset(&mut b), || to_coset(&mut c)),
    );

    a.par_iter_mut()
        .zip(b.par_iter())
        .zip(c.par_iter())
        .for_each(|((x, y), z)| *x = *x * y - z);
    drop((b, c));

    let z_inv = domain.vanishing_at(g).invert().unwrap();
    let g_inv = g.invert().unwrap();
    domain.ifft_then_scale(&mut a, domain.size_inv() * z_inv, g_inv);
    // A·B − C has degree at most 2n − 2, so H has degree at most n − 2.
    debug_assert!(bool::from(a[n - 1].is_zero()) || n == 1);
    a.truncate(n - 1);
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Evaluates a polynomial given by coefficients at x.
    fn eval(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn quotient_satisfies_the_divisibility_identity() {
        let mut rng = ChaCha8Rng::seed_from_u64(31);
        for rows in [1usize, 2, 5, 16, 100] {
            let domain = Domain::new(rows).unwrap();
            // A satisfied assignment: random a, b and c = a·b on the rows, zero beyond.
            let a: Vec<Scalar> = (0..rows).map(|_| Scalar::random(&mut rng)).collect();
            let b: Vec<Scalar> = (0..rows).map(|_| Scalar::random(&mut rng)).collect();
            let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
            let h = quotient(&domain, a.clone(), b.clone(), c.clone());
            assert_eq!(h.len(), domain.size() - 1);

            // Interpolate A, B, C and check A(x)B(x) − C(x) = H(x)Z(x) at a random x.
            let interp = |mut v: Vec<Scalar>| {
                v.resize(domain.size(), Scalar::ZERO);
                domain.ifft(&mut v);
                v
            };
            let (pa, pb, pc) = (interp(a), interp(b), interp(c));
            let x = Scalar::random(&mut rng);
            assert_eq!(
                eval(&pa, x) * eval(&pb, x) - eval(&pc, x),
                eval(&h, x) * domain.vanishing_at(x),
                "rows = {rows}"
            );
        }
    }
}
