//! TEMP oracle: the generator before the refactor.
#![allow(dead_code)]
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::field::powers;
use crate::fixed_base::FixedBase;
use crate::params::{Parameters, VerifyingKey};
use crate::ToxicWaste;
use cuzk_field::{Field, G1Projective, G2Projective, Group, Scalar};
use cuzk_synth::{Csr, Pce};
use rayon::prelude::*;
const ROWS_PER_PASS: usize = 1 << 16;
const ROWS_PER_TASK: usize = 1 << 10;
fn batch_invert(v: &mut [Scalar]) -> bool {
    v.par_chunks_mut(4096).all(|chunk| {
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
/// `L_k(τ)` for every `k < n`: `Z(τ)/n · ω^k/(τ − ω^k)`.
/// Fails if τ is in the domain (then `Z(τ) = 0` and the basis degenerates).
fn lagrange_at(domain: &Domain, tau: Scalar) -> Result<Vec<Scalar>> {
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
fn check_csr(m: &Csr, rows: usize, num_vars: usize, name: &'static str) -> Result<()> {
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
fn column_sums(m: &Csr, num_vars: usize, weights: &[Scalar]) -> (Vec<Scalar>, Vec<bool>) {
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
struct QapAtTau {
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
fn qap_at(pce: &Pce, lagrange: &[Scalar]) -> QapAtTau {
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

/// Generates parameters for the PCE's circuit from the given toxic waste, over the
/// standard G1 and G2 generators. Deterministic.
pub(crate) fn old_generate(pce: &Pce, toxic: &ToxicWaste) -> Result<Parameters> {
    let ToxicWaste {
        tau,
        alpha,
        beta,
        gamma,
        delta,
    } = *toxic;
    let ni = pce.num_inputs;
    let na = pce.num_aux;
    let num_vars = ni + na;
    let rows = pce.num_rows();
    for (m, name) in [
        (&pce.a, "A row pointer count"),
        (&pce.b, "B row pointer count"),
        (&pce.c, "C row pointer count"),
    ] {
        check_csr(m, rows, num_vars, name)?;
    }
    let gamma_inv: Option<Scalar> = gamma.invert().into();
    let gamma_inv = gamma_inv.ok_or(Error::DegenerateToxicWaste("gamma is zero"))?;
    let delta_inv: Option<Scalar> = delta.invert().into();
    let delta_inv = delta_inv.ok_or(Error::DegenerateToxicWaste("delta is zero"))?;

    let domain = Domain::new(rows)?;
    let n = domain.size();
    let lagrange = lagrange_at(&domain, tau)?;
    let qap = qap_at(pce, &lagrange);
    drop(lagrange);

    // H query: τ^i·Z(τ)/δ for i < n − 1.
    let h_scalars = powers(n - 1, domain.vanishing_at(tau) * delta_inv, tau);

    // IC (inputs) and L (aux): (β·A_j + α·B_j + C_j) / γ or / δ.
    let ext: Vec<Scalar> = (0..num_vars)
        .into_par_iter()
        .map(|j| {
            let inv = if j < ni { gamma_inv } else { delta_inv };
            (beta * qap.a[j] + alpha * qap.b[j] + qap.c[j]) * inv
        })
        .collect();
    if let Some(j) = ext.par_iter().position_first(|e| bool::from(e.is_zero())) {
        let unused = !(qap.in_a[j] || qap.in_b[j] || qap.in_c[j]);
        return Err(if j >= ni && unused {
            Error::UnconstrainedVariable { index: j - ni }
        } else {
            Error::DegenerateToxicWaste("an input or L query point is the identity")
        });
    }

    // A and B queries: only variables whose polynomial is non-zero at τ. The prover pairs
    // them with the densities (which variables appear at all), so a variable that appears
    // but evaluates to zero would misalign the two: refuse such toxic waste. Inputs are
    // always in A, through their input rows.
    let degenerate = |values: &[Scalar], present: &[bool], all_inputs: bool| {
        values
            .par_iter()
            .zip(present.par_iter())
            .enumerate()
            .any(|(j, (v, &p))| bool::from(v.is_zero()) && (p || (all_inputs && j < ni)))
    };
    if degenerate(&qap.a, &qap.in_a, true) || degenerate(&qap.b, &qap.in_b, false) {
        return Err(Error::DegenerateToxicWaste(
            "an A or B polynomial vanishes at tau",
        ));
    }
    let nonzero = |v: &[Scalar]| -> Vec<Scalar> {
        v.par_iter()
            .copied()
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };
    let a_scalars = nonzero(&qap.a);
    let b_scalars = nonzero(&qap.b);
    drop(qap);

    // One table per group serves every query at once.
    let vk_g1 = [alpha, beta, delta];
    let vk_g2 = [beta, gamma, delta];
    let g1_scalars: Vec<Scalar> = [&vk_g1[..], &h_scalars, &ext, &a_scalars, &b_scalars].concat();
    drop((h_scalars, ext, a_scalars));
    let g1_table = FixedBase::new(G1Projective::generator(), g1_scalars.len());
    let mut g1 = g1_table.mul_many(&g1_scalars);
    drop((g1_table, g1_scalars));
    let g2_scalars: Vec<Scalar> = [&vk_g2[..], &b_scalars].concat();
    let g2_table = FixedBase::new(G2Projective::generator(), g2_scalars.len());
    let mut g2 = g2_table.mul_many(&g2_scalars);
    drop(g2_table);

    // Split the batches back into queries, from the end.
    let b_g1 = g1.split_off(g1.len() - b_scalars.len());
    let a = g1.split_off(3 + (n - 1) + num_vars);
    let l = g1.split_off(3 + (n - 1) + ni);
    let ic = g1.split_off(3 + (n - 1));
    let h = g1.split_off(3);
    let b_g2 = g2.split_off(3);

    Ok(Parameters {
        vk: VerifyingKey {
            alpha_g1: g1[0],
            beta_g1: g1[1],
            delta_g1: g1[2],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g2: g2[2],
            ic,
        },
        h,
        l,
        a,
        b_g1,
        b_g2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    pub(crate) fn constrain_unused(mut pce: Pce) -> Pce {
        let nv = pce.num_inputs + pce.num_aux;
        let mut used = vec![false; nv];
        for m in [&pce.a, &pce.b, &pce.c] {
            for &c in &m.cols {
                used[c as usize] = true;
            }
        }
        let unused: Vec<u32> = (0..nv).filter(|&j| !used[j]).map(|j| j as u32).collect();
        let rows = pce.num_constraints;
        for (m, in_a) in [(&mut pce.a, true), (&mut pce.b, false), (&mut pce.c, false)] {
            let split = m.row_ptr[rows];
            let tail_cols = m.cols.split_off(split as usize);
            let tail_vals = m.vals.split_off(split as usize);
            let tail_ptr: Vec<u64> = m.row_ptr[rows + 1..].iter().map(|p| p - split).collect();
            m.row_ptr.truncate(rows + 1);
            for &j in &unused {
                if in_a {
                    m.cols.push(j);
                    m.vals.push(Scalar::ONE);
                }
                m.row_ptr.push(m.cols.len() as u64);
            }
            let base = m.cols.len() as u64;
            m.cols.extend(tail_cols);
            m.vals.extend(tail_vals);
            m.row_ptr.extend(tail_ptr.iter().map(|p| p + base));
        }
        pce.num_constraints += unused.len();
        pce
    }

    #[test]
    fn tmp_new_equals_old() {
        let mut oks = 0;
        for seed in 0..30u64 {
            let c = cuzk_synth::testing::RandomCircuit::new(seed, 60 + 10 * seed as usize);
            let pce = constrain_unused(Pce::record(c).unwrap());
            let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(seed));
            let old = old_generate(&pce, &toxic);
            let new = crate::generate_parameters_with(&pce, &toxic);
            match (old, new) {
                (Ok(a), Ok(b)) => {
                    oks += 1;
                    assert_eq!(a, b, "seed {seed}")
                }
                (Err(a), Err(b)) => {
                    eprintln!("{a}");
                    assert_eq!(format!("{a}"), format!("{b}"), "seed {seed}")
                }
                (a, b) => panic!("seed {seed}: {a:?} vs {b:?}"),
            }
        }
        assert!(oks > 20, "{oks}");
        for pce in [
            cuzk_circuits::SyntheticPoRep::new((1 << 13) - 2, 1).pce(),
            Pce::record(cuzk_circuits::Sha256Preimage::with_approx_constraints(
                1 << 14,
                2,
            ))
            .unwrap(),
        ] {
            let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(77));
            assert_eq!(
                old_generate(&pce, &toxic).unwrap(),
                crate::generate_parameters_with(&pce, &toxic).unwrap()
            );
        }
    }
}
