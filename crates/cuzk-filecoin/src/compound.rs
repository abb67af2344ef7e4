//! The one proving path every Filecoin proof kind shares: filecoin-proofs builds each
//! partition's circuit (as its `CompoundProof::circuit_proofs` does), cuzk synthesizes the
//! witnesses on the circuit's PCE and proves them through the backend, and every proof is
//! checked against the verifier's own public inputs before it is returned.

use crate::cache::{CircuitId, CircuitKeys};
use crate::error::{chain, Error, Result};
use crate::Prover;
use blstrs::Scalar as Fr;
use cuzk_groth16::Proof;
use cuzk_synth::{Witness, WitnessCs};
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

/// Circuits over runs of one partition's challenges, each with the number of challenges it
/// covers (see [`join_runs`]).
pub(crate) type Runs<C> = Vec<(C, usize)>;

/// Proves `vanilla_proofs[k]` as partition `k` of circuit `CP`, with `inputs_for(k)` the
/// public inputs the verifier will use for that partition. `runs(k, vanilla)` may split the
/// partition's circuit into circuits over runs of its challenges, synthesized in parallel and
/// joined ([`join_runs`]); `None` synthesizes the partition's circuit whole.
pub(crate) fn prove_partitions<'a, S, C, CP>(
    prover: &Prover<'_>,
    id: &CircuitId,
    pub_in: &S::PublicInputs,
    vanilla_proofs: &[S::Proof],
    pub_params: &S::PublicParams,
    inputs_for: impl Fn(usize) -> anyhow::Result<Vec<Fr>> + Sync,
    runs: impl Fn(usize, &S::Proof) -> Option<Runs<C>> + Sync,
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
            let whole = || -> Result<Witness> {
                let c = CP::circuit(pub_in, Default::default(), vanilla, pub_params, Some(k))
                    .map_err(|e| Error::Circuit {
                        circuit: circuit(),
                        partition: k,
                        message: chain(&e),
                    })?;
                keys.pce
                    .synthesize_witness(c)
                    .map_err(|source| Error::Synthesis {
                        circuit: circuit(),
                        partition: k,
                        source,
                    })
            };
            let joined = runs(k, vanilla).and_then(|runs| {
                let n = runs.len();
                join_runs(runs, keys.pce.num_inputs, keys.pce.num_aux)
                    .inspect(|_| tracing::debug!(partition = k, runs = n, "witness joined from runs"))
                    .inspect_err(|reason| {
                        tracing::warn!(partition = k, %reason, "split synthesis failed; synthesizing the whole circuit")
                    })
                    .ok()
            });
            let w = match joined {
                Some(w) => w,
                None => whole()?,
            };
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

/// Synthesizes circuits over consecutive runs of one partition's challenges in parallel and
/// joins their witnesses into the partition's (`num_inputs`, ONE included, and `num_aux` are
/// its shape).
///
/// Each run's circuit is the partition's circuit restricted to some challenges: it allocates
/// the circuit's common part first (the same values in every run), then its challenges, each
/// the same number of variables. The partition's witness is then the first run's, followed by
/// every other run's without its common part. The sizes of the common part and of a challenge
/// follow from the first run and the partition's shape; a run that does not fit them, or a
/// common part that differs between runs, is an error (the caller synthesizes whole instead).
pub(crate) fn join_runs<C: bellpepper_core::Circuit<Fr> + Send>(
    runs: Runs<C>,
    num_inputs: usize,
    num_aux: usize,
) -> std::result::Result<Witness, String> {
    let counts: Vec<usize> = runs.iter().map(|r| r.1).collect();
    let challenges: usize = counts.iter().sum::<usize>().max(1);
    let subs: Vec<Witness> = runs
        .into_par_iter()
        .map(|(c, n)| {
            // Room for the run's share of the partition and a common part, so that the
            // witness does not grow by copying.
            let mut cs = WitnessCs::with_capacity(
                num_inputs.div_ceil(challenges) * n + RUN_SLACK,
                num_aux.div_ceil(challenges) * n + RUN_SLACK,
            );
            c.synthesize(&mut cs)?;
            Ok(cs.into_witness())
        })
        .collect::<std::result::Result<_, bellpepper_core::SynthesisError>>()
        .map_err(|e| format!("a run's synthesis failed: {e}"))?;
    join_witnesses(subs, &counts, num_inputs, num_aux)
}

/// Variables a run's witness has room for beyond its share of the partition's.
const RUN_SLACK: usize = 1 << 16;

/// The joining step of [`join_runs`], on the runs' witnesses.
fn join_witnesses(
    subs: Vec<Witness>,
    counts: &[usize],
    num_inputs: usize,
    num_aux: usize,
) -> std::result::Result<Witness, String> {
    let (Some(first), Some(&first_count)) = (subs.first(), counts.first()) else {
        return Err("no runs".into());
    };
    let rest: usize = counts[1..].iter().sum();
    if rest == 0 || counts.len() != subs.len() {
        return Err(format!(
            "runs of {counts:?} challenges for {} witnesses",
            subs.len()
        ));
    }
    // Per challenge and common part, from the first run and the whole shape.
    let per = |whole: usize, part: usize| -> std::result::Result<(usize, usize), String> {
        let challenges = whole
            .checked_sub(part)
            .filter(|d| d % rest == 0)
            .map(|d| d / rest)
            .ok_or_else(|| {
                format!("{whole} variables do not split as {part} + {rest} challenges")
            })?;
        let common = part.checked_sub(first_count * challenges).ok_or_else(|| {
            format!("the first run's {part} variables are fewer than its challenges'")
        })?;
        Ok((challenges, common))
    };
    let (ci, common_i) = per(num_inputs, first.inputs.len())?;
    let (ca, common_a) = per(num_aux, first.aux.len())?;
    for (j, (w, &n)) in subs.iter().zip(counts).enumerate() {
        let shape = (w.inputs.len(), w.aux.len());
        if shape != (common_i + n * ci, common_a + n * ca) {
            return Err(format!(
                "run {j} has shape {shape:?}, not that of {n} challenges"
            ));
        }
        if w.inputs[..common_i] != first.inputs[..common_i]
            || w.aux[..common_a] != first.aux[..common_a]
        {
            return Err(format!(
                "run {j}'s common part differs from the first run's"
            ));
        }
    }
    let mut subs = subs.into_iter();
    let Witness {
        mut inputs,
        mut aux,
    } = subs.next().expect("at least one run");
    inputs.reserve_exact(num_inputs - inputs.len());
    aux.reserve_exact(num_aux - aux.len());
    for w in subs {
        inputs.extend_from_slice(&w.inputs[common_i..]);
        aux.extend_from_slice(&w.aux[common_a..]);
    }
    Ok(Witness { inputs, aux })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A witness of a circuit with a common part (ONE, 2 inputs, 1 aux) and the given
    /// challenges, each 2 inputs and 3 aux valued after the challenge.
    fn witness(challenges: std::ops::Range<u64>) -> Witness {
        let mut w = Witness {
            inputs: vec![Fr::ONE, Fr::from(7), Fr::from(8)],
            aux: vec![Fr::from(9)],
        };
        for c in challenges {
            w.inputs.extend([Fr::from(100 + c), Fr::from(200 + c)]);
            w.aux
                .extend([Fr::from(300 + c), Fr::from(400 + c), Fr::from(500 + c)]);
        }
        w
    }

    #[test]
    fn runs_join_into_the_whole_witness() {
        let whole = witness(0..5);
        let (ni, na) = (whole.inputs.len(), whole.aux.len());
        let runs = vec![witness(0..2), witness(2..4), witness(4..5)];
        assert_eq!(join_witnesses(runs, &[2, 2, 1], ni, na).unwrap(), whole);
        let runs = vec![witness(0..1), witness(1..5)];
        assert_eq!(join_witnesses(runs, &[1, 4], ni, na).unwrap(), whole);
    }

    #[test]
    fn runs_that_do_not_add_up_are_refused() {
        let whole = witness(0..4);
        let (ni, na) = (whole.inputs.len(), whole.aux.len());
        // A run with one challenge too many for its count.
        let runs = vec![witness(0..2), witness(2..5)];
        assert!(join_witnesses(runs, &[2, 2], ni, na).is_err());
        // A common part that differs.
        let mut other = witness(2..4);
        other.aux[0] = Fr::from(1);
        assert!(join_witnesses(vec![witness(0..2), other], &[2, 2], ni, na).is_err());
        // One run is no split.
        assert!(join_witnesses(vec![witness(0..4)], &[4], ni, na).is_err());
    }
}
