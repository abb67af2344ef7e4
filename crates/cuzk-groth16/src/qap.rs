//! The QAP of a PCE at a point τ: Lagrange basis values over the domain and, per variable,
//! `A_j(τ)`, `B_j(τ)`, `C_j(τ)` (the matrices transposed into per-column sums).

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::field::{batch_invert, powers};
use cuzk_field::{Field, Scalar};
use cuzk_synth::{Csr, Pce};
use rayon::prelude::*;

/// Rows whose products are formed in one parallel pass before being summed into columns:
/// bounds the scratch buffer.
const ROWS_PER_PASS: usize = 1 << 16;
/// Rows per parallel task within a pass.
const ROWS_PER_TASK: usize = 1 << 10;

/// `L_k(τ)` for every `k < n`: `Z(τ)/n · ω^k/(τ − ω^k)`.
/// Fails if τ is in the domain (then `Z(τ) = 0` and the basis degenerates).
pub(crate) fn lagrange_at(domain: &Domain, tau: Scalar) -> Result<Vec<Scalar>> {
    let n = domain.size();
    let z = domain.vanishing_at(tau);
    if bool::from(z.is_zero()) {
        return Err(Error::DegenerateToxicWaste(
            "tau lies in the evaluation domain",
        ));
    }
    let omegas = powers(n, Scalar::ONE, domain.omega());
    let mut denominators: Vec<Scalar> = omegas.par_iter().map(|w| tau - w).collect();
    // τ ∉ domain, so no denominator is zero.
    assert!(batch_invert(&mut denominators));
    let factor = z * domain.size_inv();
    Ok(omegas
        .par_iter()
        .zip(denominators.par_iter())
        .map(|(w, d)| factor * w * d)
        .collect())
}

/// Checks that `m` is a well-formed CSR matrix of `rows` rows over `num_vars` columns.
pub(crate) fn check_csr(m: &Csr, rows: usize, num_vars: usize, name: &'static str) -> Result<()> {
    let mismatch = |what, expected, found| Error::ShapeMismatch {
        what,
        expected,
        found,
    };
    if m.row_ptr.len() != rows + 1 {
        return Err(mismatch(name, rows + 1, m.row_ptr.len()));
    }
    if m.vals.len() != m.cols.len() {
        return Err(mismatch(
            "PCE coefficient count",
            m.cols.len(),
            m.vals.len(),
        ));
    }
    if m.row_ptr[0] != 0 {
        return Err(mismatch("first PCE row pointer", 0, m.row_ptr[0] as usize));
    }
    if m.row_ptr[rows] != m.cols.len() as u64 {
        return Err(mismatch(
            "last PCE row pointer",
            m.cols.len(),
            m.row_ptr[rows] as usize,
        ));
    }
    if let Some(w) = m.row_ptr.windows(2).find(|w| w[0] > w[1]) {
        // Row pointers must not decrease: report the offending pair.
        return Err(mismatch(
            "PCE row pointer after a larger one",
            w[0] as usize,
            w[1] as usize,
        ));
    }
    if let Some(&col) = m.cols.par_iter().find_any(|&&c| c as usize >= num_vars) {
        return Err(mismatch(
            "PCE column index bound",
            num_vars,
            col as usize + 1,
        ));
    }
    Ok(())
}

/// Per-column sums `Σ_row m[row][j]·weights[row]`, plus whether column j has any entry.
/// The matrix must have passed [`check_csr`] with `weights.len()` rows.
pub(crate) fn column_sums(
    m: &Csr,
    num_vars: usize,
    weights: &[Scalar],
) -> (Vec<Scalar>, Vec<bool>) {
    let mut sums = vec![Scalar::ZERO; num_vars];
    let mut present = vec![false; num_vars];
    let rows = weights.len();
    let mut products: Vec<Scalar> = Vec::new();
    for pass_start in (0..rows).step_by(ROWS_PER_PASS) {
        let pass_end = (pass_start + ROWS_PER_PASS).min(rows);
        let base = m.row_ptr[pass_start] as usize;
        let end = m.row_ptr[pass_end] as usize;
        products.clear();
        products.resize(end - base, Scalar::ZERO);

        // Split the pass's products into the disjoint runs of each task's rows.
        let mut tasks = Vec::new();
        let mut rest = products.as_mut_slice();
        for task_start in (pass_start..pass_end).step_by(ROWS_PER_TASK) {
            let task_end = (task_start + ROWS_PER_TASK).min(pass_end);
            let len = (m.row_ptr[task_end] - m.row_ptr[task_start]) as usize;
            let (mine, tail) = rest.split_at_mut(len);
            tasks.push((task_start, task_end, mine));
            rest = tail;
        }
        tasks.into_par_iter().for_each(|(lo, hi, out)| {
            let offset = m.row_ptr[lo] as usize;
            for row in lo..hi {
                let (s, e) = (m.row_ptr[row] as usize, m.row_ptr[row + 1] as usize);
                for k in s..e {
                    out[k - offset] = m.vals[k] * weights[row];
                }
            }
        });

        // Summing into columns is a scatter; it is one addition per entry, cheap next to
        // the multiplications above.
        for (col, p) in m.cols[base..end].iter().zip(&products) {
            sums[*col as usize] += p;
            present[*col as usize] = true;
        }
    }
    (sums, present)
}

/// `A_j(τ)`, `B_j(τ)`, `C_j(τ)` and the A/B presence of every variable of a PCE.
pub(crate) struct QapAtTau {
    /// `A_j(τ)`, inputs then aux.
    pub a: Vec<Scalar>,
    /// `B_j(τ)`.
    pub b: Vec<Scalar>,
    /// `C_j(τ)`.
    pub c: Vec<Scalar>,
    /// Whether variable j has an entry in A.
    pub in_a: Vec<bool>,
    /// Whether variable j has an entry in B.
    pub in_b: Vec<bool>,
    /// Whether variable j has an entry in C.
    pub in_c: Vec<bool>,
}

/// Evaluates the PCE's QAP at τ (the matrices must have passed [`check_csr`]).
pub(crate) fn qap_at(pce: &Pce, lagrange: &[Scalar]) -> QapAtTau {
    let num_vars = pce.num_inputs + pce.num_aux;
    let weights = &lagrange[..pce.num_rows()];
    let ((a, in_a), ((b, in_b), (c, in_c))) = rayon::join(
        || column_sums(&pce.a, num_vars, weights),
        || {
            rayon::join(
                || column_sums(&pce.b, num_vars, weights),
                || column_sums(&pce.c, num_vars, weights),
            )
        },
    );
    QapAtTau {
        a,
        b,
        c,
        in_a,
        in_b,
        in_c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn lagrange_basis_interpolates_powers_of_tau() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let d = Domain::new(16).unwrap();
        let tau = Scalar::random(&mut rng);
        let lag = lagrange_at(&d, tau).unwrap();
        // Σ_k L_k(τ)·p(ω^k) = p(τ) for p of degree < n; check p(x) = x^3 + 2.
        let mut acc = Scalar::ZERO;
        for (k, l) in lag.iter().enumerate() {
            let x = d.omega().pow_vartime([k as u64]);
            acc += *l * (x.pow_vartime([3u64]) + Scalar::from(2u64));
        }
        assert_eq!(acc, tau.pow_vartime([3u64]) + Scalar::from(2u64));
        assert!(lagrange_at(&d, d.omega()).is_err());
    }

    #[test]
    fn column_sums_transpose_the_matrix() {
        // Rows: [2·x0 + 3·x2], [], [x1], [5·x2]
        let m = Csr {
            row_ptr: vec![0, 2, 2, 3, 4],
            cols: vec![0, 2, 1, 2],
            vals: vec![2u64.into(), 3u64.into(), 1u64.into(), 5u64.into()],
        };
        check_csr(&m, 4, 4, "A row pointer count").unwrap();
        let w: Vec<Scalar> = [7u64, 11, 13, 17].iter().map(|&x| x.into()).collect();
        let (sums, present) = column_sums(&m, 4, &w);
        assert_eq!(sums[0], Scalar::from(14u64));
        assert_eq!(sums[1], Scalar::from(13u64));
        assert_eq!(sums[2], Scalar::from(3 * 7 + 5 * 17u64));
        assert_eq!(sums[3], Scalar::ZERO);
        assert_eq!(present, vec![true, true, true, false]);
        assert!(check_csr(&m, 4, 2, "A").is_err());
        assert!(check_csr(&m, 3, 4, "A").is_err());
    }
}
