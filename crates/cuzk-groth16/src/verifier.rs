//! Groth16 verification, single and batched, on blst's multi-Miller loop.
//!
//! A proof is valid when `e(A, B) = e(α, β)·e(IC, γ)·e(C, δ)` with `IC = ic₀ + Σ xᵢ·icᵢ`.
//! It is checked as one multi-Miller loop over `(A, B), (IC, −γ), (C, −δ)` and one final
//! exponentiation compared against the precomputed `e(α, β)`.

use crate::error::{Error, Result};
use crate::params::VerifyingKey;
use crate::proof::Proof;
use blstrs::G2Prepared;
use cuzk_field::{
    Bls12, Curve, Engine, Field, G1Affine, G1Projective, G2Affine, Gt, MultiMillerLoop, PrimeField,
    Scalar,
};
use cuzk_msm::cpu::msm_g1_affine;
use pairing::MillerLoopResult;
use rand_core::RngCore;
use rayon::prelude::*;
use std::fmt;

/// A verifying key with its pairing-side values precomputed.
#[derive(Clone)]
pub struct PreparedVerifyingKey {
    /// `e(α, β)`.
    alpha_g1_beta_g2: Gt,
    /// `−γ`, prepared (single verification).
    neg_gamma_g2: G2Prepared,
    /// `−δ`, prepared (single verification).
    neg_delta_g2: G2Prepared,
    /// `γ`, prepared (batch verification).
    gamma_g2: G2Prepared,
    /// `δ`, prepared (batch verification).
    delta_g2: G2Prepared,
    /// The input commitments.
    ic: Vec<G1Affine>,
}

impl fmt::Debug for PreparedVerifyingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedVerifyingKey")
            .field("alpha_g1_beta_g2", &self.alpha_g1_beta_g2)
            .field("ic", &self.ic)
            .finish_non_exhaustive()
    }
}

impl PreparedVerifyingKey {
    /// Number of public inputs verified, the constant ONE not counted.
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    fn check_inputs(&self, public_inputs: &[Scalar]) -> Result<()> {
        if public_inputs.len() + 1 != self.ic.len() {
            return Err(Error::WrongInputCount {
                expected: self.num_public_inputs(),
                found: public_inputs.len(),
            });
        }
        Ok(())
    }

    /// `Σ coeffs[i]·ic[i]` (coeffs has one entry per ic point).
    fn commit(&self, coeffs: &[Scalar]) -> G1Projective {
        msm_g1_affine(&self.ic, coeffs)
    }
}

/// Precomputes `e(α, β)` and the prepared G2 points of a verifying key.
pub fn prepare_verifying_key(vk: &VerifyingKey) -> PreparedVerifyingKey {
    let prepared = |p: G2Affine| G2Prepared::from(p);
    PreparedVerifyingKey {
        alpha_g1_beta_g2: Bls12::pairing(&vk.alpha_g1, &vk.beta_g2),
        neg_gamma_g2: prepared(-vk.gamma_g2),
        neg_delta_g2: prepared(-vk.delta_g2),
        gamma_g2: prepared(vk.gamma_g2),
        delta_g2: prepared(vk.delta_g2),
        ic: vk.ic.clone(),
    }
}

/// Verifies one proof against its public inputs (the constant ONE not included).
///
/// `Ok(false)` means the proof is invalid; an input count that does not match the key
/// is an error.
pub fn verify_proof(
    pvk: &PreparedVerifyingKey,
    proof: &Proof,
    public_inputs: &[Scalar],
) -> Result<bool> {
    pvk.check_inputs(public_inputs)?;
    let coeffs: Vec<Scalar> = std::iter::once(Scalar::ONE)
        .chain(public_inputs.iter().copied())
        .collect();
    let ic = pvk.commit(&coeffs).to_affine();
    let b = G2Prepared::from(proof.b);
    let ml = Bls12::multi_miller_loop(&[
        (&proof.a, &b),
        (&ic, &pvk.neg_gamma_g2),
        (&proof.c, &pvk.neg_delta_g2),
    ]);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2)
}

/// Verifies many proofs of one circuit at once with a random linear combination: with
/// random 128-bit `zⱼ`, checks
/// `Πⱼ e(zⱼ·Aⱼ, −Bⱼ) · e(Σⱼ zⱼ·ICⱼ, γ) · e(Σⱼ zⱼ·Cⱼ, δ) = e(α, β)^{−Σⱼ zⱼ}`,
/// which holds for valid proofs and, except with probability about 2⁻¹²⁸, fails if any
/// proof is invalid. One final exponentiation serves the whole batch.
///
/// `public_inputs[j]` belongs to `proofs[j]`. An empty batch verifies. A batch of one is
/// verified with [`verify_proof`].
pub fn verify_proofs_batch<R: RngCore>(
    pvk: &PreparedVerifyingKey,
    rng: &mut R,
    proofs: &[&Proof],
    public_inputs: &[Vec<Scalar>],
) -> Result<bool> {
    if proofs.len() != public_inputs.len() {
        return Err(Error::ShapeMismatch {
            what: "public input vectors for the batch",
            expected: proofs.len(),
            found: public_inputs.len(),
        });
    }
    for inputs in public_inputs {
        pvk.check_inputs(inputs)?;
    }
    match proofs {
        [] => return Ok(true),
        [one] => return verify_proof(pvk, one, &public_inputs[0]),
        _ => {}
    }

    // 128-bit coefficients: enough for soundness, half the cost of full-width ones.
    let z: Vec<Scalar> = proofs
        .iter()
        .map(|_| {
            let lo = rng.next_u64() as u128;
            let hi = rng.next_u64() as u128;
            Scalar::from_u128((hi << 64) | lo)
        })
        .collect();
    let z_sum: Scalar = z.iter().sum();

    // Σⱼ zⱼ·ICⱼ = (Σⱼ zⱼ)·ic₀ + Σᵢ (Σⱼ zⱼ·xⱼᵢ)·icᵢ₊₁.
    let num_inputs = pvk.num_public_inputs();
    let mut coeffs = Vec::with_capacity(num_inputs + 1);
    coeffs.push(z_sum);
    coeffs.extend(
        (0..num_inputs)
            .into_par_iter()
            .map(|i| {
                public_inputs
                    .iter()
                    .zip(&z)
                    .map(|(x, zj)| x[i] * zj)
                    .sum::<Scalar>()
            })
            .collect::<Vec<_>>(),
    );
    let ic = pvk.commit(&coeffs).to_affine();

    let c_points: Vec<G1Affine> = proofs.iter().map(|p| p.c).collect();
    let c = msm_g1_affine(&c_points, &z).to_affine();

    let scaled_a: Vec<G1Projective> = proofs
        .par_iter()
        .zip(z.par_iter())
        .map(|(p, zj)| p.a * zj)
        .collect();
    let mut scaled_a_affine = vec![G1Affine::default(); scaled_a.len()];
    G1Projective::batch_normalize(&scaled_a, &mut scaled_a_affine);
    let neg_b: Vec<G2Prepared> = proofs.par_iter().map(|p| G2Prepared::from(-p.b)).collect();

    let mut terms: Vec<(&G1Affine, &G2Prepared)> = scaled_a_affine.iter().zip(&neg_b).collect();
    terms.push((&ic, &pvk.gamma_g2));
    terms.push((&c, &pvk.delta_g2));
    let ml = Bls12::multi_miller_loop(&terms);
    Ok(ml.final_exponentiation() == pvk.alpha_g1_beta_g2 * (-z_sum))
}
