//! Parameter generation from toxic waste (a trusted setup for tests, benchmarks and
//! development; production keys come from a ceremony).
//!
//! The QAP is evaluated at τ straight from the PCE's matrices ([`GeneratorScalars`]); every
//! query point is then a fixed-base multiple of the G1 or G2 generator. On the CPU the
//! multiples come from window tables in parallel and are batch-normalised; the GPU path
//! (`gpu::generate_parameters_gpu`) multiplies the same scalars on the device, so both give
//! the same parameters for the same toxic waste. The output matches bellperson's
//! `generate_parameters` for the same circuit and toxic waste with the standard generators,
//! point for point: the A and B queries omit variables whose polynomial is zero at τ,
//! exactly as bellperson does.

use crate::error::{Error, Result};
use crate::field::powers;
use crate::fixed_base::FixedBase;
use crate::params::{Parameters, VerifyingKey};
use crate::qap::{check_csr, lagrange_at, qap_at, QapAtTau};
use bellpepper_core::Circuit;
use cuzk_field::consts::FR_TWO_ADICITY;
use cuzk_field::{Curve, Field, G1Affine, G1Projective, G2Affine, G2Projective, Group, Scalar};
use cuzk_synth::Pce;
use rand_core::RngCore;
use rayon::prelude::*;
use std::time::{Duration, Instant};

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

/// Where the time of one parameter generation went (wall clock).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParamgenTimings {
    /// The scalar computation's phases on the CPU, in order (checks, Lagrange basis, QAP at
    /// τ, H, IC/L, A/B).
    pub scalar_phases: Vec<(&'static str, Duration)>,
    /// All the scalars, on the CPU.
    pub scalars: Duration,
    /// Window tables of the two generators (GPU: with the streams and pinned buffers).
    pub tables: Duration,
    /// The fixed-base multiplications: on the CPU their wall time, on the GPU the device
    /// time of the kernels (overlapped with uploads and downloads).
    pub multiply: Duration,
    /// GPU only: host time staging the scalars and queueing their copies to the device.
    pub upload: Duration,
    /// GPU only: host time bringing the points back and converting them to host points,
    /// including waits for the device where it is behind.
    pub download: Duration,
    /// Everything, from the PCE to the parameters.
    pub total: Duration,
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
    generate_parameters_with_timings(pce, toxic).map(|(p, _)| p)
}

/// [`generate_parameters_with`], also saying where the time went.
pub fn generate_parameters_with_timings(
    pce: &Pce,
    toxic: &ToxicWaste,
) -> Result<(Parameters, ParamgenTimings)> {
    let start = Instant::now();
    let scalars = GeneratorScalars::compute(pce, toxic)?;
    let mut timings = ParamgenTimings {
        scalars: start.elapsed(),
        scalar_phases: scalars.phases.clone(),
        ..ParamgenTimings::default()
    };

    // One table per group serves every query.
    let t = Instant::now();
    let g1_table = FixedBase::new(G1Projective::generator(), scalars.g1_len());
    let g2_table = FixedBase::new(G2Projective::generator(), scalars.b.len());
    timings.tables = t.elapsed();

    let t = Instant::now();
    let GeneratorScalars { h, ic, l, a, b, .. } = &scalars;
    let params = Parameters {
        vk: scalars.verifying_key(g1_table.mul_many(ic)),
        h: g1_table.mul_many(h),
        l: g1_table.mul_many(l),
        a: g1_table.mul_many(a),
        b_g1: g1_table.mul_many(b),
        b_g2: g2_table.mul_many(b),
    };
    timings.multiply = t.elapsed();
    timings.total = start.elapsed();
    tracing::debug!(
        scalars_ms = ms(timings.scalars),
        tables_ms = ms(timings.tables),
        multiply_ms = ms(timings.multiply),
        total_ms = ms(timings.total),
        "generated parameters on the CPU"
    );
    Ok((params, timings))
}

/// Milliseconds, for log fields.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Every scalar a parameter set multiplies a generator by: the verifying key's, then per
/// query in file order. Both generators (CPU and GPU) multiply exactly these.
pub struct GeneratorScalars {
    /// The toxic waste, for the verifying key's points.
    pub toxic: ToxicWaste,
    /// H: `τ^i·Z(τ)/δ` for `i < n − 1`.
    pub h: Vec<Scalar>,
    /// IC: `(β·A_j(τ) + α·B_j(τ) + C_j(τ))/γ` for every input j.
    pub ic: Vec<Scalar>,
    /// L: the same over δ for every aux variable.
    pub l: Vec<Scalar>,
    /// A: `A_j(τ)` for the variables whose polynomial is non-zero at τ.
    pub a: Vec<Scalar>,
    /// B (G1 and G2): `B_j(τ)` likewise.
    pub b: Vec<Scalar>,
    /// How long each phase took.
    pub phases: Vec<(&'static str, Duration)>,
}

// Lengths only: the toxic waste stays out of logs.
impl std::fmt::Debug for GeneratorScalars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratorScalars")
            .field("h", &self.h.len())
            .field("ic", &self.ic.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b", &self.b.len())
            .finish_non_exhaustive()
    }
}

/// Times phases of the scalar computation, logging each.
struct Phases {
    at: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    fn new() -> Self {
        Phases {
            at: Instant::now(),
            done: Vec::new(),
        }
    }

    fn end(&mut self, name: &'static str) {
        let now = Instant::now();
        let d = now - self.at;
        tracing::debug!(phase = name, ms = ms(d), "parameter scalars");
        self.done.push((name, d));
        self.at = now;
    }
}

impl GeneratorScalars {
    /// Evaluates the PCE's QAP at τ and forms every query's scalars, checking the circuit
    /// and the toxic waste on the way (the errors of [`generate_parameters_with`]).
    pub fn compute(pce: &Pce, toxic: &ToxicWaste) -> Result<Self> {
        let ToxicWaste {
            tau,
            alpha,
            beta,
            gamma,
            delta,
        } = *toxic;
        let mut phases = Phases::new();
        let ni = pce.num_inputs;
        let num_vars = ni + pce.num_aux;
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
        // τ = 0 would make every H point but the first the identity.
        if bool::from(tau.is_zero()) {
            return Err(Error::DegenerateToxicWaste("tau is zero"));
        }
        // The domain's size alone: its twiddle table is never needed here.
        let log_n = domain_log_size(rows)?;
        let n = 1usize << log_n;
        phases.end("checks");

        let lagrange = lagrange_at(log_n, tau)?;
        phases.end("lagrange");
        let qap = qap_at(pce, &lagrange);
        drop(lagrange);
        phases.end("qap");

        // H query: τ^i·Z(τ)/δ for i < n − 1.
        let z = tau.pow_vartime([n as u64]) - Scalar::ONE;
        let h = powers(n - 1, z * delta_inv, tau);
        phases.end("h");

        // IC (inputs) and L (aux): (β·A_j + α·B_j + C_j) / γ or / δ.
        let ext = |j: usize, inv: Scalar| (beta * qap.a[j] + alpha * qap.b[j] + qap.c[j]) * inv;
        let ic: Vec<Scalar> = (0..ni).into_par_iter().map(|j| ext(j, gamma_inv)).collect();
        let l: Vec<Scalar> = (ni..num_vars)
            .into_par_iter()
            .map(|j| ext(j, delta_inv))
            .collect();
        let zero_at = |v: &[Scalar]| v.par_iter().position_first(|e| bool::from(e.is_zero()));
        if let Some(j) = zero_at(&ic).or_else(|| zero_at(&l).map(|k| ni + k)) {
            let unused = !(qap.in_a[j] || qap.in_b[j] || qap.in_c[j]);
            return Err(if j >= ni && unused {
                Error::UnconstrainedVariable { index: j - ni }
            } else {
                Error::DegenerateToxicWaste("an input or L query point is the identity")
            });
        }
        phases.end("ic_l");

        let (a, b) = ab_scalars(qap, ni)?;
        phases.end("a_b");

        Ok(GeneratorScalars {
            toxic: *toxic,
            h,
            ic,
            l,
            a,
            b,
            phases: phases.done,
        })
    }

    /// Scalars multiplied in G1 (the verifying key's three included).
    pub fn g1_len(&self) -> usize {
        3 + self.h.len() + self.ic.len() + self.l.len() + self.a.len() + self.b.len()
    }

    /// The verifying key around the IC points.
    pub fn verifying_key(&self, ic: Vec<G1Affine>) -> VerifyingKey {
        let ToxicWaste {
            alpha,
            beta,
            gamma,
            delta,
            ..
        } = self.toxic;
        let g1 = |s: Scalar| (G1Projective::generator() * s).to_affine();
        let g2 = |s: Scalar| -> G2Affine { (G2Projective::generator() * s).to_affine() };
        VerifyingKey {
            alpha_g1: g1(alpha),
            beta_g1: g1(beta),
            delta_g1: g1(delta),
            beta_g2: g2(beta),
            gamma_g2: g2(gamma),
            delta_g2: g2(delta),
            ic,
        }
    }
}

/// log2 of the smallest radix-2 domain with `rows` points, refused (as bellperson does) from
/// 2^32 on.
pub(crate) fn domain_log_size(rows: usize) -> Result<u32> {
    let log_size = rows.max(1).next_power_of_two().trailing_zeros();
    if log_size >= FR_TWO_ADICITY {
        return Err(Error::DomainTooLarge {
            rows,
            log_size,
            max_log: FR_TWO_ADICITY - 1,
        });
    }
    Ok(log_size)
}

/// The A and B queries' scalars: only variables whose polynomial is non-zero at τ. The prover
/// pairs them with the densities (which variables appear at all), so a variable that appears
/// but evaluates to zero would misalign the two: such toxic waste is refused. Inputs are
/// always in A, through their input rows.
fn ab_scalars(qap: QapAtTau, ni: usize) -> Result<(Vec<Scalar>, Vec<Scalar>)> {
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
    let nonzero = |v: Vec<Scalar>| -> Vec<Scalar> {
        v.into_par_iter()
            .filter(|x| !bool::from(x.is_zero()))
            .collect()
    };
    let QapAtTau { a, b, .. } = qap;
    let (a, b) = rayon::join(|| nonzero(a), || nonzero(b));
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_sizes_round_up_and_stop_below_2_32() {
        assert_eq!(domain_log_size(0).unwrap(), 0);
        assert_eq!(domain_log_size(5).unwrap(), 3);
        assert_eq!(domain_log_size(8).unwrap(), 3);
        assert_eq!(domain_log_size(1 << 31).unwrap(), 31);
        assert!(matches!(
            domain_log_size((1usize << 31) + 1),
            Err(Error::DomainTooLarge { log_size: 32, .. })
        ));
    }
}
