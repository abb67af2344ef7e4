//! Parameter generation from toxic waste (a trusted setup for tests, benchmarks and
//! development; production keys come from a ceremony).
//!
//! The QAP is evaluated at τ straight from the PCE's matrices; every query point is then a
//! fixed-base multiple of the G1 or G2 generator, computed from window tables in parallel
//! and batch-normalised. The output matches bellperson's `generate_parameters` for the same
//! circuit and toxic waste with the standard generators, point for point: the A and B
//! queries omit variables whose polynomial is zero at τ, exactly as bellperson does.

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::field::powers;
use crate::fixed_base::FixedBase;
use crate::params::{Parameters, VerifyingKey};
use crate::qap::{check_csr, lagrange_at, qap_at};
use bellpepper_core::Circuit;
use cuzk_field::{Field, G1Projective, G2Projective, Group, Scalar};
use cuzk_synth::Pce;
use rand_core::RngCore;
use rayon::prelude::*;

/// The secret scalars of a Groth16 setup. Anyone who knows them can forge proofs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToxicWaste {
    /// The evaluation point of the QAP.
    pub tau: Scalar,
    /// α.
    pub alpha: Scalar,
    /// β.
    pub beta: Scalar,
    /// γ (divides the input commitments).
    pub gamma: Scalar,
    /// δ (divides the prover's private queries).
    pub delta: Scalar,
}

impl ToxicWaste {
    /// Draws every scalar uniformly at random.
    pub fn random<R: RngCore>(rng: &mut R) -> Self {
        ToxicWaste {
            tau: Scalar::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
        }
    }
}

/// Generates parameters for the PCE's circuit from fresh random toxic waste.
pub fn generate_parameters<R: RngCore>(pce: &Pce, rng: &mut R) -> Result<Parameters> {
    generate_parameters_with(pce, &ToxicWaste::random(rng))
}

/// Records the circuit's PCE, then generates parameters from fresh random toxic waste.
pub fn generate_random_parameters<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters> {
    let pce = Pce::record(circuit)?;
    generate_parameters(&pce, rng)
}

/// Generates parameters for the PCE's circuit from the given toxic waste, over the
/// standard G1 and G2 generators. Deterministic.
pub fn generate_parameters_with(pce: &Pce, toxic: &ToxicWaste) -> Result<Parameters> {
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
