//! The QAP of a PCE at a point τ: Lagrange basis values over the domain and, per variable,
//! `A_j(τ)`, `B_j(τ)`, `C_j(τ)` (the matrices transposed into per-column sums).

use crate::error::{Error, Result};
use crate::field::CHUNK;
use cuzk_field::consts::root_of_unity;
use cuzk_field::{Field, Scalar};
use cuzk_synth::{Csr, Pce};
use rayon::prelude::*;

/// Rows whose products are formed in one parallel pass before being summed into columns:
/// bounds the scratch buffer.
const ROWS_PER_PASS: usize = 1 << 16;
/// Rows per parallel task within a pass.
const ROWS_PER_TASK: usize = 1 << 10;
/// Column ranges per thread when summing products into columns: more ranges than threads
/// balance ranges that hold more entries (the ONE column in most circuits).
const OWNERS_PER_THREAD: usize = 2;

/// `L_k(τ) = Z(τ)/n · ω^k/(τ − ω^k)` for every `k < n = 2^log_n` (`log_n` below Fr's
/// two-adicity). Fails if τ is in the domain (then `Z(τ) = 0` and the basis degenerates).
///
/// Computed as `(Z(τ)/n) / (τ·ω^{−k} − 1)`, chunk by chunk: a running power for the
/// denominators and a batch inversion whose one inverse absorbs the factor, so four
/// multiplications per point and no buffer besides the result.
pub(crate) fn lagrange_at(log_n: u32, tau: Scalar) -> Result<Vec<Scalar>> {
    let n = 1usize << log_n;
    let z = tau.pow_vartime([n as u64]) - Scalar::ONE;
    if bool::from(z.is_zero()) {
        return Err(Error::DegenerateToxicWaste(
            "tau lies in the evaluation domain",
        ));
    }
    let omega = root_of_unity(log_n).expect("the caller checked the size against the two-adicity");
    // ω and n are non-zero: both inverses exist.
    let omega_inv = omega.invert().unwrap();
    let factor = z * Scalar::from(n as u64).invert().unwrap();
    let mut out = vec![Scalar::ZERO; n];
    let all_invertible = out
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map_init(
            || Vec::with_capacity(CHUNK),
            |denominators: &mut Vec<Scalar>, (k, chunk)| {
                denominators.clear();
                let mut v = tau * omega_inv.pow_vartime([(k * CHUNK) as u64]);
                let mut product = Scalar::ONE;
                for x in chunk.iter_mut() {
                    let d = v - Scalar::ONE;
                    // The product of the denominators before this one.
                    *x = product;
                    product *= d;
                    denominators.push(d);
                    v *= omega_inv;
                }
                let Some(inv) = Option::<Scalar>::from(product.invert()) else {
                    return false;
                };
                // factor / (d_0 ⋯ d_j) while walking back: each step peels one denominator.
                let mut inv = inv * factor;
                for (x, d) in chunk.iter_mut().zip(denominators.iter()).rev() {
                    *x *= inv;
                    inv *= d;
                }
                true
            },
        )
        .all(|ok| ok);
    // τ ∉ domain, so τ·ω^{−k} ≠ 1 for every k.
    assert!(
        all_invertible,
        "a Lagrange denominator vanished off the domain"
    );
    Ok(out)
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
    if m.coeffs.len() != m.cols.len() {
        return Err(mismatch(
            "PCE coefficient count",
            m.cols.len(),
            m.coeffs.len(),
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
    if let Some(w) = m.row_ptr.par_windows(2).find_first(|w| w[0] > w[1]) {
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
    // The sums below add and subtract for indices 0 and 1 without looking them up.
    if m.table.first() != Some(&Scalar::ONE) || m.table.get(1) != Some(&-Scalar::ONE) {
        let right = usize::from(m.table.first() == Some(&Scalar::ONE))
            + usize::from(m.table.get(1) == Some(&-Scalar::ONE));
        return Err(mismatch("PCE coefficient table head (ONE, -ONE)", 2, right));
    }
    let table = m.table.len();
    if let Some(&k) = m.coeffs.par_iter().find_any(|&&k| k as usize >= table) {
        return Err(mismatch(
            "PCE coefficient index bound",
            table,
            k as usize + 1,
        ));
    }
    Ok(())
}

/// Per-column sums `Σ_row m[row][j]·weights[row]`, plus whether column j has any entry.
/// The matrix must have passed [`check_csr`] with `weights.len()` rows.
///
/// Rows go in passes: the pass's products are formed in parallel by rows, then summed into
/// columns in parallel by column ranges, each task scanning the pass's column indices for
/// its own range (a transpose without atomics or a second copy of the matrix).
pub(crate) fn column_sums(
    m: &Csr,
    num_vars: usize,
    weights: &[Scalar],
) -> (Vec<Scalar>, Vec<bool>) {
    let mut sums = vec![Scalar::ZERO; num_vars];
    let mut present = vec![false; num_vars];
    let rows = weights.len();
    let owners = rayon::current_num_threads() * OWNERS_PER_THREAD;
    let span = num_vars.div_ceil(owners).max(1);
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
                let w = weights[row];
                for k in s..e {
                    // Most coefficients are ±1: skip the multiplication for them.
                    out[k - offset] = match m.coeffs[k] {
                        Csr::ONE_INDEX => w,
                        Csr::MINUS_ONE_INDEX => -w,
                        c => m.table[c as usize] * w,
                    };
                }
            }
        });

        let cols = &m.cols[base..end];
        let products = &products;
        sums.par_chunks_mut(span)
            .zip(present.par_chunks_mut(span))
            .enumerate()
            .for_each(|(owner, (sums, present))| {
                let lo = owner * span;
                for (&col, p) in cols.iter().zip(products) {
                    // One comparison: columns below the range wrap around to huge offsets.
                    let j = (col as usize).wrapping_sub(lo);
                    if j < sums.len() {
                        sums[j] += p;
                        present[j] = true;
                    }
                }
            });
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
    use cuzk_ntt::cpu::Domain;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn lagrange_basis_interpolates_powers_of_tau() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let d = Domain::new(4).unwrap();
        let tau = Scalar::random(&mut rng);
        let lag = lagrange_at(d.log_n(), tau).unwrap();
        // Σ_k L_k(τ)·p(ω^k) = p(τ) for p of degree < n; check p(x) = x^3 + 2.
        let mut acc = Scalar::ZERO;
        for (k, l) in lag.iter().enumerate() {
            let x = d.omega().pow_vartime([k as u64]);
            acc += *l * (x.pow_vartime([3u64]) + Scalar::from(2u64));
        }
        assert_eq!(acc, tau.pow_vartime([3u64]) + Scalar::from(2u64));
        assert!(lagrange_at(d.log_n(), d.omega()).is_err());
        // Across chunks: the basis sums to one.
        let big = lagrange_at(14, tau).unwrap();
        assert_eq!(big.iter().sum::<Scalar>(), Scalar::ONE);
        assert_eq!(lagrange_at(0, tau).unwrap(), vec![Scalar::ONE]);
    }

    #[test]
    fn column_sums_transpose_the_matrix() {
        // Rows: [2·x0 + 3·x2], [], [x1 − x3], [5·x2]
        let mut m = Csr::with_capacity(4, 5);
        m.push_row(&[(0, 2u64.into()), (2, 3u64.into())]);
        m.push_row(&[]);
        m.push_row(&[(1, Scalar::ONE), (3, -Scalar::ONE)]);
        m.push_row(&[(2, 5u64.into())]);
        check_csr(&m, 4, 5, "A row pointer count").unwrap();
        let w: Vec<Scalar> = [7u64, 11, 13, 17].iter().map(|&x| x.into()).collect();
        let (sums, present) = column_sums(&m, 5, &w);
        assert_eq!(sums[0], Scalar::from(14u64));
        assert_eq!(sums[1], Scalar::from(13u64));
        assert_eq!(sums[2], Scalar::from(3 * 7 + 5 * 17u64));
        assert_eq!(sums[3], -Scalar::from(13u64));
        assert_eq!(sums[4], Scalar::ZERO);
        assert_eq!(present, vec![true, true, true, true, false]);
        assert!(check_csr(&m, 4, 3, "A").is_err());
        assert!(check_csr(&m, 3, 5, "A").is_err());
        let mut bad = m.clone();
        bad.coeffs[0] = bad.table.len() as u32;
        assert!(check_csr(&bad, 4, 5, "A").is_err());
    }
}
