//! The quotient polynomial `H = (A·B − C)/Z` of one witness, via FFTs over Fr.
//!
//! A, B, C are given by their evaluations on the domain (the a, b, c vectors). They are
//! interpolated, evaluated on the coset `g·⟨ω⟩` (g = 7, bellperson's generator) where Z is
//! the non-zero constant `g^n − 1`, combined pointwise and interpolated back. The scalings
//! by `1/n`, by the coset powers and by `1/Z(g)` are fused into the passes that follow the
//! transforms (`cuzk_ntt::cpu::Domain::h_quotient`, the one CPU implementation).

use crate::error::Result;
use cuzk_field::{Field, Scalar};
use cuzk_ntt::cpu::Domain;

/// H's `n − 1` coefficients, where `n` is the domain size. The witness must satisfy every
/// row (`a·b = c`), or the division is not exact and the result is meaningless.
pub(crate) fn quotient(
    domain: &Domain,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Result<Vec<Scalar>> {
    let n = domain.size();
    for v in [&mut a, &mut b, &mut c] {
        v.resize(n, Scalar::ZERO);
    }
    domain.h_quotient(&mut a, &mut b, &mut c)?;
    drop((b, c));
    // A·B − C has degree at most 2n − 2, so H has degree at most n − 2.
    debug_assert!(a[n - 1] == Scalar::ZERO || n == 1);
    a.truncate(n - 1);
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::domain_log_size;

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
            let domain = Domain::new(domain_log_size(rows).unwrap()).unwrap();
            // A satisfied assignment: random a, b and c = a·b on the rows, zero beyond.
            let a: Vec<Scalar> = (0..rows).map(|_| Scalar::random(&mut rng)).collect();
            let b: Vec<Scalar> = (0..rows).map(|_| Scalar::random(&mut rng)).collect();
            let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
            let h = quotient(&domain, a.clone(), b.clone(), c.clone()).unwrap();
            assert_eq!(h.len(), domain.size() - 1);

            // Interpolate A, B, C and check A(x)B(x) − C(x) = H(x)Z(x) at a random x.
            let interp = |mut v: Vec<Scalar>| {
                v.resize(domain.size(), Scalar::ZERO);
                domain.intt(&mut v).unwrap();
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
