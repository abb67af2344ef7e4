//! The one proving path every Filecoin proof kind shares: filecoin-proofs builds each
//! partition's circuit (as its `CompoundProof::circuit_proofs` does), cuzk synthesizes the
//! witnesses on the circuit's PCE and proves them through the backend, and every proof is
//! checked against the verifier's own public inputs before it is returned.

use crate::cache::{CircuitId, CircuitKeys};
use crate::error::{chain, Error, Result};
use crate::Prover;
use blstrs::Scalar as Fr;
use cuzk_groth16::Proof;
use cuzk_synth::Witness;
use ff::Field;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::ParameterSetMetadata;
use storage_proofs_core::proof::ProofScheme;

/// How long each phase of a request took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// Loading (or creating) parameters and PCE; zero when they were already loaded.
    pub load: Duration,
    /// Building the circuits and synthesizing their witnesses.
    pub synthesis: Duration,
    /// The backend's proving.
    pub prove: Duration,
    /// The self-check of every proof.
    pub verify: Duration,
    /// The whole request.
    pub total: Duration,
}

/// A finished proof: its bytes in filecoin-proofs' layout and how long it took.
#[derive(Clone, Debug)]
pub struct Proved {
    /// The proof bytes: 192 bytes per partition, in partition order (for NI-PoRep, the
    /// aggregate).
    pub proof: Vec<u8>,
    /// The circuit that was proved.
    pub circuit: CircuitId,
    /// Number of partition proofs.
    pub partitions: usize,
    /// Phase timings.
    pub timings: Timings,
}

/// Proves `vanilla_proofs[k]` as partition `k` of circuit `CP`, with `inputs_for(k)` the
/// public inputs the verifier will use for that partition.
pub(crate) fn prove_partitions<'a, S, C, CP>(
    prover: &Prover<'_>,
    id: &CircuitId,
    pub_in: &S::PublicInputs,
    vanilla_proofs: &[S::Proof],
    pub_params: &S::PublicParams,
    inputs_for: impl Fn(usize) -> anyhow::Result<Vec<Fr>> + Sync,
) -> Result<Proved>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: bellpepper_core::Circuit<Fr> + CircuitComponent + Send,
    CP: CompoundProof<'a, S, C>,
{
    let span =
        tracing::info_span!("prove_partitions", circuit = %id, partitions = vanilla_proofs.len());
    let _enter = span.enter();
    let start = Instant::now();
    let circuit = || id.cache_id.clone();

    let load_start = Instant::now();
    let keys: Arc<CircuitKeys> = prover
        .cache()
        .circuit(id, || CP::blank_circuit(pub_params))?;
    let load = load_start.elapsed();

    // The verifier's inputs first: cheap, and they name a wrong request before any work.
    let expected: Vec<Vec<Fr>> = (0..vanilla_proofs.len())
        .into_par_iter()
        .map(|k| {
            inputs_for(k).map_err(|e| Error::VanillaRejected {
                kind: id.kind,
                message: format!("public inputs of partition {k}: {}", chain(&e)),
            })
        })
        .collect::<Result<_>>()?;

    let synth_start = Instant::now();
    let witnesses: Vec<Witness> = vanilla_proofs
        .par_iter()
        .enumerate()
        .map(|(k, vanilla)| {
            let c = CP::circuit(pub_in, Default::default(), vanilla, pub_params, Some(k)).map_err(
                |e| Error::Circuit {
                    circuit: circuit(),
                    partition: k,
                    message: chain(&e),
                },
            )?;
            let w = keys
                .pce
                .synthesize_witness(c)
                .map_err(|source| Error::Synthesis {
                    circuit: circuit(),
                    partition: k,
                    source,
                })?;
            check_inputs(&w, &expected[k]).map_err(|index| Error::PublicInputsMismatch {
                circuit: circuit(),
                partition: k,
                index,
            })?;
            Ok(w)
        })
        .collect::<Result<_>>()?;
    let synthesis = synth_start.elapsed();
    tracing::info!(ms = synthesis.as_millis() as u64, "witnesses synthesized");

    let prove_start = Instant::now();
    let mut rng = rand::rngs::OsRng;
    let randomness: Vec<(Fr, Fr)> = witnesses
        .iter()
        .map(|_| (Fr::random(&mut rng), Fr::random(&mut rng)))
        .collect();
    let proofs = prover
        .backend()
        .prove(&keys.params, &keys.pce, &witnesses, &randomness)
        .map_err(|source| Error::Prover {
            circuit: circuit(),
            partitions: witnesses.len(),
            source,
        })?;
    drop(witnesses);
    let prove = prove_start.elapsed();
    tracing::info!(ms = prove.as_millis() as u64, "partitions proved");
    if proofs.len() != expected.len() {
        return Err(Error::ProofCount {
            circuit: circuit(),
            expected: expected.len(),
            found: proofs.len(),
        });
    }

    let verify_start = Instant::now();
    verify_all(&keys, &proofs, &expected)?;
    let verify = verify_start.elapsed();

    let mut bytes = Vec::with_capacity(proofs.len() * Proof::SIZE);
    for p in &proofs {
        bytes.extend_from_slice(&p.to_bytes());
    }
    let timings = Timings {
        load,
        synthesis,
        prove,
        verify,
        total: start.elapsed(),
    };
    tracing::info!(
        load_ms = load.as_millis() as u64,
        synthesis_ms = synthesis.as_millis() as u64,
        prove_ms = prove.as_millis() as u64,
        verify_ms = verify.as_millis() as u64,
        total_ms = timings.total.as_millis() as u64,
        "proof done"
    );
    Ok(Proved {
        proof: bytes,
        circuit: id.clone(),
        partitions: proofs.len(),
        timings,
    })
}

/// Errors with the first differing input index unless the witness's public inputs (ONE
/// excluded) are exactly `expected`.
fn check_inputs(w: &Witness, expected: &[Fr]) -> std::result::Result<(), usize> {
    let found = w.inputs.get(1..).unwrap_or_default();
    if found == expected {
        return Ok(());
    }
    Err(found
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(found.len().min(expected.len())))
}

fn verify_all(keys: &CircuitKeys, proofs: &[Proof], expected: &[Vec<Fr>]) -> Result<()> {
    let bad = proofs
        .par_iter()
        .zip(expected)
        .enumerate()
        .find_map_first(|(k, (p, inputs))| {
            match cuzk_groth16::verify_proof(&keys.pvk, p, inputs) {
                Ok(true) => None,
                Ok(false) | Err(_) => Some(k),
            }
        });
    match bad {
        None => Ok(()),
        Some(partition) => Err(Error::ProofInvalid {
            circuit: keys.id.cache_id.clone(),
            partition,
        }),
    }
}
