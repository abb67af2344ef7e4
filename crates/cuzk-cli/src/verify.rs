//! `cuzk prove --verify`: checks the daemon's proofs here, independently of its own check,
//! against the verifying key it returned and public inputs computed here from the request.

use anyhow::{bail, ensure, Context, Result};
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof, VerifyingKey};
use cuzk_proto::{AwaitProofResponse, SubmitProofRequest};

/// The public inputs of each partition of a built-in circuit's request, as its circuit
/// computes them.
pub fn public_inputs(submit: &SubmitProofRequest) -> Result<Vec<Vec<cuzk_field::Scalar>>> {
    let field = |name: &str| submit.circuit_fields.get(name).copied();
    match submit.circuit.as_str() {
        "sha256" => Ok(vec![
            Sha256Preimage::new(submit.circuit_inputs.clone()).public_inputs()
        ]),
        "synthetic-porep" => {
            let constraints = match (field("num_constraints"), field("log2_constraints")) {
                (Some(n), _) => n,
                (None, Some(log2)) if log2 < 64 => 1 << log2,
                _ => bail!("synthetic-porep needs num_constraints or log2_constraints"),
            };
            let constraints = usize::try_from(constraints).context("num_constraints")?;
            let seed = field("seed").unwrap_or(0);
            let partitions = field("partitions").unwrap_or(1);
            Ok((0..partitions)
                .map(|i| SyntheticPoRep::new(constraints, seed.wrapping_add(i)).public_inputs())
                .collect())
        }
        "" => bail!("--verify checks the built-in circuits (sha256, synthetic-porep) only"),
        other => bail!("--verify does not know the public inputs of circuit {other:?}"),
    }
}

/// Verifies every proof of `response` for `submit`; returns how many.
pub fn check(submit: &SubmitProofRequest, response: &AwaitProofResponse) -> Result<usize> {
    let inputs = public_inputs(submit)?;
    let vk = VerifyingKey::read(&response.verifying_key[..])
        .context("reading the verifying key the daemon returned")?;
    let pvk = prepare_verifying_key(&vk);
    ensure!(
        response.proof.len() == inputs.len() * Proof::SIZE,
        "expected {} proofs ({} bytes), got {} bytes",
        inputs.len(),
        inputs.len() * Proof::SIZE,
        response.proof.len()
    );
    for (i, (bytes, inputs)) in response.proof.chunks(Proof::SIZE).zip(&inputs).enumerate() {
        let proof = Proof::from_bytes(bytes).with_context(|| format!("decoding proof {i}"))?;
        let ok =
            verify_proof(&pvk, &proof, inputs).with_context(|| format!("verifying proof {i}"))?;
        ensure!(ok, "proof {i} of job {} does not verify", response.job_id);
    }
    Ok(inputs.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_follow_the_request() {
        let mut r = SubmitProofRequest {
            circuit: "synthetic-porep".into(),
            ..SubmitProofRequest::default()
        };
        r.circuit_fields.insert("log2_constraints".into(), 8);
        r.circuit_fields.insert("seed".into(), 5);
        r.circuit_fields.insert("partitions".into(), 2);
        let inputs = public_inputs(&r).unwrap();
        assert_eq!(inputs.len(), 2);
        assert_eq!(inputs[1], SyntheticPoRep::new(256, 6).public_inputs());
        r.circuit = "sha256".into();
        r.circuit_inputs = b"abc".to_vec();
        assert_eq!(public_inputs(&r).unwrap().len(), 1);
        r.circuit = "other".into();
        assert!(public_inputs(&r).is_err());
    }
}
