//! The CPU reference prover.
//!
//! Two entry points share one core: the PCE path ([`prove`], [`prove_batch`]) takes a
//! witness and evaluates the recorded matrices, the reference path ([`prove_synthesized`])
//! takes a full synthesis. Both check shapes and constraint satisfaction first, compute H
//! with FFTs, run the MSMs on blst and assemble the proof exactly as bellperson does, so
//! for the same r and s the proof is bellperson's `create_proof`, bit for bit.

mod checks;
mod quotient;

use crate::error::{Error, Result};
use crate::params::{PreparedParameters, VerifyingKey};
use crate::proof::Proof;
use bellpepper_core::Circuit;
use checks::check_satisfied;
pub use checks::{check_delta, check_queries, check_witness, Shape};
use cuzk_field::{Curve, Field, G1Projective, G2Projective, Scalar};
use cuzk_msm::cpu::{msm_g1, msm_g2, Segment};
use cuzk_ntt::cpu::Domain;
use cuzk_synth::{
    synthesize_full, synthesize_witness, Density, Evaluations, FullSynthesis, Pce, Witness,
};
use quotient::quotient;
use rand_core::RngCore;

/// Proves one witness of the PCE's circuit with the given randomness `r`, `s`.
///
/// Fails with a typed error, before any expensive work, if the witness or PCE does not
/// match the parameters or the witness does not satisfy some constraint.
pub fn prove(
    params: &PreparedParameters,
    pce: &Pce,
    witness: &Witness,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    let density = pce.density();
    prove_with_density(params, pce, &density, witness, r, s)
}

/// Proves several witnesses of the same circuit, one `(r, s)` pair per witness. The PCE's
/// densities are computed once for the batch; the witnesses are proved one after another,
/// each with all cores. A witness that fails stops the batch with [`Error::InBatch`]
/// naming it.
pub fn prove_batch(
    params: &PreparedParameters,
    pce: &Pce,
    witnesses: &[Witness],
    randomness: &[(Scalar, Scalar)],
) -> Result<Vec<Proof>> {
    if witnesses.len() != randomness.len() {
        return Err(Error::ShapeMismatch {
            what: "randomness pairs for the batch",
            expected: witnesses.len(),
            found: randomness.len(),
        });
    }
    let density = pce.density();
    witnesses
        .iter()
        .zip(randomness)
        .enumerate()
        .map(|(index, (w, &(r, s)))| {
            prove_with_density(params, pce, &density, w, r, s).map_err(|e| Error::InBatch {
                index,
                source: Box::new(e),
            })
        })
        .collect()
}

/// Proves from a full (reference) synthesis with the given randomness.
pub fn prove_synthesized(
    params: &PreparedParameters,
    synthesis: &FullSynthesis,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    let FullSynthesis {
        witness,
        eval,
        density,
    } = synthesis;
    let shape = Shape::of(params);
    check_witness(&shape, &witness.inputs, witness.aux.len())?;
    let domain = Domain::new(check_queries(
        &shape,
        witness.inputs.len(),
        witness.aux.len(),
        density,
        eval.a.len(),
    )?)?;
    prove_core(params, &domain, witness, eval.clone(), density, r, s)
}

/// Synthesizes the circuit on the reference path ([`synthesize_full`]: every linear
/// combination evaluated as the circuit runs, like bellperson) and proves with the given
/// randomness. For many proofs of one circuit, the PCE path ([`prove`]) is faster.
pub fn create_proof<C: Circuit<Scalar>>(
    circuit: C,
    params: &PreparedParameters,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    let synthesis = synthesize_full(circuit)?;
    prove_synthesized(params, &synthesis, r, s)
}

/// [`create_proof`] with `r` then `s` drawn from `rng` (bellperson's order, so the same
/// seeded rng gives bellperson's `create_random_proof` proof).
pub fn create_random_proof<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    params: &PreparedParameters,
    rng: &mut R,
) -> Result<Proof> {
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    create_proof(circuit, params, r, s)
}

/// The PCE path from a circuit: witness-only synthesis, then [`prove`] with `r` then `s`
/// drawn from `rng`.
pub fn create_random_proof_with_pce<C: Circuit<Scalar>, R: RngCore>(
    circuit: C,
    pce: &Pce,
    params: &PreparedParameters,
    rng: &mut R,
) -> Result<Proof> {
    let witness = synthesize_witness(circuit)?;
    let r = Scalar::random(&mut *rng);
    let s = Scalar::random(&mut *rng);
    prove(params, pce, &witness, r, s)
}

fn prove_with_density(
    params: &PreparedParameters,
    pce: &Pce,
    density: &Density,
    witness: &Witness,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    // A packed aux assignment is expanded: this path reads the values one by one.
    let witness = &*witness.unpacked();
    let shape = Shape::of(params);
    check_witness(&shape, &witness.inputs, witness.aux.len())?;
    if pce.num_inputs != witness.inputs.len() || pce.num_aux != witness.aux.len() {
        return Err(Error::ShapeMismatch {
            what: "PCE variables (inputs + aux)",
            expected: witness.inputs.len() + witness.aux.len(),
            found: pce.num_inputs + pce.num_aux,
        });
    }
    let log_size = check_queries(&shape, pce.num_inputs, pce.num_aux, density, pce.num_rows())?;
    let domain = Domain::new(log_size)?;
    let eval = pce.evaluate(witness)?;
    prove_core(params, &domain, witness, eval, density, r, s)
}

/// Everything after the shape checks: satisfaction, H, MSMs, assembly.
fn prove_core(
    params: &PreparedParameters,
    domain: &Domain,
    witness: &Witness,
    eval: Evaluations,
    density: &Density,
    r: Scalar,
    s: Scalar,
) -> Result<Proof> {
    let vk = params.vk();
    check_delta(&vk.delta_g1, &vk.delta_g2)?;
    check_satisfied(&eval, eval.a.len())?;

    let Evaluations { a, b, c } = eval;
    let h_coeffs = quotient(domain, a, b, c)?;

    let (inputs, aux) = (&witness.inputs[..], &witness.aux[..]);
    let ni = inputs.len();
    let nbi = density.b_input.count_ones();
    let h = msm_g1(&[Segment::dense(params.h(), &h_coeffs)]);
    drop(h_coeffs);
    let l = msm_g1(&[Segment::dense(params.l(), aux)]);
    let a_sum = msm_g1(&[
        Segment::dense(&params.a()[..ni], inputs),
        Segment::sparse(&params.a()[ni..], aux, &density.a_aux),
    ]);
    let b_g1_sum = msm_g1(&[
        Segment::sparse(&params.b_g1()[..nbi], inputs, &density.b_input),
        Segment::sparse(&params.b_g1()[nbi..], aux, &density.b_aux),
    ]);
    let b_g2_sum = msm_g2(&[
        Segment::sparse(&params.b_g2()[..nbi], inputs, &density.b_input),
        Segment::sparse(&params.b_g2()[nbi..], aux, &density.b_aux),
    ]);

    Ok(assemble(
        vk,
        &Sums {
            h,
            l,
            a: a_sum,
            b_g1: b_g1_sum,
            b_g2: b_g2_sum,
        },
        r,
        s,
    ))
}

/// The five MSM results of one proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sums {
    /// Σ hᵢ·Hᵢ.
    pub h: G1Projective,
    /// Σ auxᵢ·Lᵢ.
    pub l: G1Projective,
    /// Σ wᵢ·Aᵢ over A's density.
    pub a: G1Projective,
    /// Σ wᵢ·Bᵢ in G1 over B's density.
    pub b_g1: G1Projective,
    /// Σ wᵢ·Bᵢ in G2 over B's density.
    pub b_g2: G2Projective,
}

/// The proof from the MSM results and the randomness, as bellperson assembles it:
/// A = α + ΣA + rδ;  B = β + ΣB + sδ;
/// C = s·A + r·B_G1 − rs·δ + L + H, expanded as s·ΣA + r·ΣB_G1 + rs·δ + s·α + r·β + L + H.
pub fn assemble(vk: &VerifyingKey, sums: &Sums, r: Scalar, s: Scalar) -> Proof {
    let g_a = sums.a + vk.alpha_g1 + vk.delta_g1 * r;
    let g_b = sums.b_g2 + vk.beta_g2 + vk.delta_g2 * s;
    let g_c = sums.a * s
        + sums.b_g1 * r
        + vk.delta_g1 * (r * s)
        + vk.alpha_g1 * s
        + vk.beta_g1 * r
        + sums.l
        + sums.h;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}
