//! The one proving path every Filecoin proof kind shares: filecoin-proofs builds each
//! partition's circuit (as its `CompoundProof::circuit_proofs` does), cuzk synthesizes the
//! witnesses on the circuit's PCE and proves them through the backend, and every proof is
//! checked against the verifier's own public inputs before it is returned.

use crate::adapter::Sequential;
use crate::cache::{CircuitId, CircuitKeys, ParamCache};
use crate::error::{chain, Error, ProofKind, Result};
use crate::Prover;
use blstrs::Scalar as Fr;
use cuzk_groth16::Proof;
use cuzk_synth::{Pce, Witness, WitnessCs};
use ff::Field;
use rayon::prelude::*;
use std::marker::PhantomData;
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

/// One request's partitions of one circuit, checked and ready to synthesize: what the direct
/// [`Prover`] calls and the scheduler's instances (feature `sched`) both work from.
pub(crate) trait Job: Send + Sync {
    /// The circuit.
    fn id(&self) -> &CircuitId;
    /// How many partition proofs the request makes.
    fn partitions(&self) -> usize;
    /// The circuit's parameters and PCE from `cache` (loaded, recorded or generated there).
    fn load(&self, cache: &ParamCache) -> Result<Arc<CircuitKeys>>;
    /// Records the circuit's PCE from its blank circuit, as the cache does.
    fn record(&self) -> std::result::Result<Pce, cuzk_synth::SynthError>;
    /// Partition `k`'s public inputs (ONE excluded), exactly as the verifier computes them.
    fn public_inputs(&self, k: usize) -> anyhow::Result<Vec<Fr>>;
    /// Partition `k`'s witness on `pce` (its public inputs not yet checked), written into
    /// the memory of `spare`, a witness no longer needed (`Witness::default()` for none).
    fn witness(&self, pce: &Pce, k: usize, spare: Witness) -> Result<Witness>;
    /// Whether a partition's witness may be synthesized in runs joined afterwards (which
    /// holds the runs' witnesses beside the joined one for a moment).
    fn splits(&self) -> bool {
        false
    }
    /// Whether the request's proof is made from its partition proofs by [`Job::finish`]
    /// (NI-PoRep's aggregate) rather than being their encodings back to back.
    fn finishes(&self) -> bool {
        false
    }
    /// The request's proof from its partitions' verified proofs and their public inputs (ONE
    /// excluded), in partition order, with the parameter folder of `cache`: by default the
    /// proofs' 192-byte encodings back to back, filecoin-proofs' multi-partition form.
    fn finish(&self, cache: &ParamCache, proofs: &[Proof], inputs: &[Vec<Fr>]) -> Result<Vec<u8>> {
        let _ = (cache, inputs);
        let mut bytes = Vec::with_capacity(proofs.len() * Proof::SIZE);
        for p in proofs {
            bytes.extend_from_slice(&p.to_bytes());
        }
        Ok(bytes)
    }
}

/// A circuit named ahead of any request (the daemon's `PreloadSRS`): its id, and how to load
/// its parameters and PCE into a cache exactly as its first request would.
pub(crate) type Preload = (CircuitId, LoadFn);

/// Loads a circuit's parameters and PCE into a cache.
pub(crate) type LoadFn = Box<dyn Fn(&ParamCache) -> Result<Arc<CircuitKeys>> + Send + Sync>;

/// The [`Preload`] of circuit `id`, whose blank circuit (what its PCE is recorded from)
/// `blank` makes, as [`CompoundJob`]'s `load` makes it.
pub(crate) fn preload<C: bellpepper_core::Circuit<Fr> + 'static>(
    id: CircuitId,
    blank: impl Fn() -> C + Send + Sync + 'static,
) -> Preload {
    let loaded = id.clone();
    (id, Box::new(move |cache| cache.circuit(&loaded, &blank)))
}

/// How a partition's circuit is split into runs of its challenges, if at all: from the
/// circuits' public inputs and parameters, the partition index, its vanilla proof and the
/// number of partitions.
pub(crate) type SplitFn<S, C> = fn(
    &<S as ProofScheme<'static>>::PublicInputs,
    &<S as ProofScheme<'static>>::PublicParams,
    usize,
    &<S as ProofScheme<'static>>::Proof,
    usize,
) -> Option<Runs<C>>;

/// How a partition's witness is made natively, if its circuit has a native generator: from
/// the circuits' public inputs and parameters, the partition index and its vanilla proof
/// (what `CompoundProof::circuit` builds the circuit from), into the system given (a whole
/// circuit's, input 0 ONE); the error says why it could not.
pub(crate) type NativeFn<S> = fn(
    &<S as ProofScheme<'static>>::PublicInputs,
    &<S as ProofScheme<'static>>::PublicParams,
    usize,
    &<S as ProofScheme<'static>>::Proof,
    &mut WitnessCs,
) -> std::result::Result<(), String>;

/// A native generator and whether it packs the aux assignment ([`cuzk_synth::Witness::packed`]:
/// PoRep's, nearly all bits); one that packs gets a system with no room made for the aux
/// values one by one ([`WitnessCs::reusing_for_packing`]).
pub(crate) struct Native<S: ProofScheme<'static>> {
    pub make: NativeFn<S>,
    pub packs: bool,
}

/// How a circuit's PCE is recorded when the cache has no file of it, from the scheme's
/// public parameters (PoRep: its challenges in parallel runs).
pub(crate) type RecordFn<S> = fn(
    &<S as ProofScheme<'static>>::PublicParams,
) -> std::result::Result<Pce, cuzk_synth::SynthError>;

/// The [`Job`] of a filecoin-proofs compound proof `CP` of scheme `S` over circuit `C`: the
/// partitions' circuits are built as its `CompoundProof::circuit_proofs` builds them.
pub(crate) struct CompoundJob<S: ProofScheme<'static>, C, CP> {
    /// The circuit.
    pub id: CircuitId,
    /// The public inputs the circuits are built with.
    pub pub_in: S::PublicInputs,
    /// The public inputs the verifier computes partition `offset + k`'s inputs from.
    pub verifier_in: S::PublicInputs,
    /// Where this request's first partition is in the verifier's count.
    pub offset: usize,
    /// One vanilla proof per partition.
    pub vanilla: Vec<S::Proof>,
    /// The scheme's public parameters.
    pub pub_params: S::PublicParams,
    /// Splits a partition's synthesis into runs of challenges (PoRep); `None` never splits.
    pub split: Option<SplitFn<S, C>>,
    /// Makes a partition's witness natively (PoRep, PoSt, SnapDeals); `None`, or a failure,
    /// synthesizes it.
    pub native: Option<Native<S>>,
    /// Records the circuit's PCE (PoRep: in runs); `None` records the blank circuit whole.
    pub record: Option<RecordFn<S>>,
    pub _marker: PhantomData<fn() -> (C, CP)>,
}

impl<S, C, CP> Job for CompoundJob<S, C, CP>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync + Send,
    C: bellpepper_core::Circuit<Fr> + CircuitComponent + Send + 'static,
    CP: CompoundProof<'static, S, C> + 'static,
{
    fn id(&self) -> &CircuitId {
        &self.id
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn load(&self, cache: &ParamCache) -> Result<Arc<CircuitKeys>> {
        cache.circuit_recorded(&self.id, || self.record())
    }

    fn record(&self) -> std::result::Result<Pce, cuzk_synth::SynthError> {
        match self.record {
            Some(record) => record(&self.pub_params),
            None => Pce::record(Sequential(CP::blank_circuit(&self.pub_params))),
        }
    }

    fn public_inputs(&self, k: usize) -> anyhow::Result<Vec<Fr>> {
        CP::generate_public_inputs(&self.verifier_in, &self.pub_params, Some(self.offset + k))
    }

    fn splits(&self) -> bool {
        self.split.is_some()
    }

    fn witness(&self, pce: &Pce, k: usize, spare: Witness) -> Result<Witness> {
        let spare = match &self.native {
            Some(native) => match native_witness::<S>(native, self, k, pce, spare) {
                Ok(w) => {
                    tracing::debug!(partition = k, "witness made natively");
                    return Ok(w);
                }
                Err((reason, spare)) => {
                    tracing::warn!(partition = k, %reason, "native witness failed; synthesizing the circuit");
                    spare
                }
            },
            None => spare,
        };
        self.synthesized(pce, k, spare)
    }
}

impl<S, C, CP> CompoundJob<S, C, CP>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync + Send,
    C: bellpepper_core::Circuit<Fr> + CircuitComponent + Send + 'static,
    CP: CompoundProof<'static, S, C> + 'static,
{
    /// Partition `k`'s witness by synthesizing its circuit (in runs of challenges where the
    /// job splits), in `spare`'s memory.
    fn synthesized(&self, pce: &Pce, k: usize, spare: Witness) -> Result<Witness> {
        let circuit = || self.id.cache_id.clone();
        let vanilla = &self.vanilla[k];
        let runs = self.split.and_then(|split| {
            split(
                &self.pub_in,
                &self.pub_params,
                k,
                vanilla,
                self.vanilla.len(),
            )
        });
        let spare = match runs {
            Some(runs) => {
                let n = runs.len();
                match join_runs(runs, pce.num_inputs, pce.num_aux, spare) {
                    Ok(w) => {
                        tracing::debug!(partition = k, runs = n, "witness joined from runs");
                        return Ok(w);
                    }
                    Err((reason, spare)) => {
                        tracing::warn!(partition = k, %reason, "split synthesis failed; synthesizing the whole circuit");
                        spare
                    }
                }
            }
            None => spare,
        };
        let c = CP::circuit(
            &self.pub_in,
            Default::default(),
            vanilla,
            &self.pub_params,
            Some(k),
        )
        .map_err(|e| Error::Circuit {
            circuit: circuit(),
            partition: k,
            message: chain(&e),
        })?;
        pce.synthesize_witness_reusing(c, spare)
            .map_err(|source| Error::Synthesis {
                circuit: circuit(),
                partition: k,
                source,
            })
    }
}

/// Every partition's public inputs as the verifier computes them (in parallel: they are cheap,
/// and they name a wrong request before any work).
pub(crate) fn expected_inputs(job: &dyn Job) -> Result<Vec<Vec<Fr>>> {
    (0..job.partitions())
        .into_par_iter()
        .map(|k| {
            job.public_inputs(k).map_err(|e| Error::VanillaRejected {
                kind: job.id().kind,
                message: format!("public inputs of partition {k}: {}", chain(&e)),
            })
        })
        .collect()
}

/// Every partition's witness of `job` on `pce`, made in parallel, each checked against the
/// verifier's public inputs `expected`.
pub(crate) fn checked_witnesses(
    job: &dyn Job,
    pce: &Pce,
    expected: &[Vec<Fr>],
) -> Result<Vec<Witness>> {
    checked(job, expected, |k| job.witness(pce, k, Witness::default()))
}

/// Every partition's witness of `job`, made by `make` in parallel, each checked against the
/// verifier's public inputs `expected`.
fn checked(
    job: &dyn Job,
    expected: &[Vec<Fr>],
    make: impl Fn(usize) -> Result<Witness> + Sync + Send,
) -> Result<Vec<Witness>> {
    (0..job.partitions())
        .into_par_iter()
        .map(|k| {
            let w = make(k)?;
            check_inputs(&w, &expected[k]).map_err(|index| Error::PublicInputsMismatch {
                circuit: job.id().cache_id.clone(),
                partition: k,
                index,
            })?;
            Ok(w)
        })
        .collect()
}

/// Every partition's witness of `job` made one way only, for comparing the two: natively
/// (an error where that fails or the circuit has none, never synthesis instead) or by
/// synthesizing the circuit; each checked against the verifier's public inputs.
pub(crate) fn witnesses_one_way<S, C, CP>(
    prover: &Prover<'_>,
    job: &CompoundJob<S, C, CP>,
    native: bool,
) -> Result<Vec<Witness>>
where
    S: ProofScheme<'static> + 'static,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync + Send,
    C: bellpepper_core::Circuit<Fr> + CircuitComponent + Send + 'static,
    CP: CompoundProof<'static, S, C> + 'static,
{
    let keys = job.load(prover.cache())?;
    let expected = expected_inputs(job)?;
    let failed = |k: usize, reason: String| Error::NativeWitness {
        circuit: job.id.cache_id.clone(),
        partition: k,
        reason,
    };
    if !native {
        return checked(job, &expected, |k| {
            job.synthesized(&keys.pce, k, Witness::default())
        });
    }
    let Some(f) = &job.native else {
        return Err(failed(0, "the circuit has no native generator".into()));
    };
    checked(job, &expected, |k| {
        native_witness::<S>(f, job, k, &keys.pce, Witness::default())
            .map_err(|(reason, _)| failed(k, reason))
    })
}

/// Proves every partition of `job` on the prover's backend: witnesses synthesized in parallel
/// on the circuit's PCE and checked against the verifier's public inputs, proofs verified.
pub(crate) fn prove_job(prover: &Prover<'_>, job: &dyn Job) -> Result<Proved> {
    let id = job.id();
    let span =
        tracing::info_span!("prove_partitions", circuit = %id, partitions = job.partitions());
    let _enter = span.enter();
    let start = Instant::now();
    let circuit = || id.cache_id.clone();

    let load_start = Instant::now();
    let keys: Arc<CircuitKeys> = job.load(prover.cache())?;
    let load = load_start.elapsed();

    let expected = expected_inputs(job)?;

    let synth_start = Instant::now();
    let witnesses = checked_witnesses(job, &keys.pce, &expected)?;
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

    let bytes = job.finish(prover.cache(), &proofs, &expected)?;
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

/// Serialized vanilla proofs as requests carry them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Vanilla<'a> {
    /// One bincode blob per proof.
    Each(&'a [Vec<u8>]),
    /// bincode blobs back to back in one buffer (each is self-delimiting), as one request
    /// field carries them.
    Concatenated(&'a [u8]),
}

impl Vanilla<'_> {
    /// Decodes every proof; an error names the proof's index and the bytes left at it.
    pub(crate) fn decode<T: serde::de::DeserializeOwned>(self, kind: ProofKind) -> Result<Vec<T>> {
        let bad = |index: usize, len: usize, e: bincode::Error| Error::VanillaDecode {
            kind,
            index,
            len,
            message: e.to_string(),
        };
        match self {
            Vanilla::Each(blobs) => blobs
                .iter()
                .enumerate()
                .map(|(i, b)| bincode::deserialize(b).map_err(|e| bad(i, b.len(), e)))
                .collect(),
            Vanilla::Concatenated(mut rest) => {
                let mut out = Vec::new();
                while !rest.is_empty() {
                    let len = rest.len();
                    out.push(
                        bincode::deserialize_from(&mut rest).map_err(|e| bad(out.len(), len, e))?,
                    );
                }
                Ok(out)
            }
        }
    }
}

/// Partition `k`'s witness of `job` from `native`, in `spare`'s memory, checked to have the
/// circuit's shape (`pce`'s inputs and aux); on failure `spare` comes back with the reason.
fn native_witness<S: ProofScheme<'static>>(
    native: &Native<S>,
    job: &CompoundJob<S, impl Sized, impl Sized>,
    k: usize,
    pce: &Pce,
    spare: Witness,
) -> std::result::Result<Witness, (String, Witness)> {
    let mut cs = if native.packs {
        WitnessCs::reusing_for_packing(spare, pce.num_inputs)
    } else {
        WitnessCs::reusing(spare, pce.num_inputs, pce.num_aux)
    };
    let made = (native.make)(&job.pub_in, &job.pub_params, k, &job.vanilla[k], &mut cs);
    let w = cs.into_witness();
    match made {
        Err(reason) => Err((reason, w)),
        Ok(()) if (w.inputs.len(), w.aux_len()) != (pce.num_inputs, pce.num_aux) => Err((
            format!(
                "{} inputs and {} aux values, where the circuit has {} and {}",
                w.inputs.len(),
                w.aux_len(),
                pce.num_inputs,
                pce.num_aux
            ),
            w,
        )),
        Ok(()) => Ok(w),
    }
}

/// Synthesizes circuits over consecutive runs of one partition's challenges in parallel and
/// joins their witnesses into the partition's (`num_inputs`, ONE included, and `num_aux` are
/// its shape), written into `spare`'s memory; on failure `spare` comes back with the reason.
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
    spare: Witness,
) -> std::result::Result<Witness, (String, Witness)> {
    let counts: Vec<usize> = runs.iter().map(|r| r.1).collect();
    let challenges: usize = counts.iter().sum::<usize>().max(1);
    let subs = runs
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
        .collect::<std::result::Result<Vec<Witness>, bellpepper_core::SynthesisError>>();
    match subs {
        Ok(subs) => join_witnesses(subs, &counts, num_inputs, num_aux, spare),
        Err(e) => Err((format!("a run's synthesis failed: {e}"), spare)),
    }
}

/// Variables a run's witness has room for beyond its share of the partition's.
const RUN_SLACK: usize = 1 << 16;

/// The joining step of [`join_runs`], on the runs' witnesses, into `spare`'s memory.
fn join_witnesses(
    subs: Vec<Witness>,
    counts: &[usize],
    num_inputs: usize,
    num_aux: usize,
    spare: Witness,
) -> std::result::Result<Witness, (String, Witness)> {
    match check_runs(&subs, counts, num_inputs, num_aux) {
        Ok((common_i, common_a)) => Ok(Witness::new(
            concat(spare.inputs, &subs, |w| &w.inputs, common_i, num_inputs),
            concat(spare.aux, &subs, |w| &w.aux, common_a, num_aux),
        )),
        Err(reason) => Err((reason, spare)),
    }
}

/// The first run's `part(w)` followed by every other run's without its first `common`
/// elements (`len` in all), in `into`'s memory, copied in parallel.
fn concat(
    mut into: Vec<Fr>,
    subs: &[Witness],
    part: impl Fn(&Witness) -> &Vec<Fr>,
    common: usize,
    len: usize,
) -> Vec<Fr> {
    const PIECE: usize = 1 << 16;
    if into.capacity() < len {
        // Fresh room of exactly `len`, rather than a reallocation that copies the old memory.
        into = Vec::with_capacity(len);
    }
    into.clear();
    into.par_extend(rayon::iter::repeat_n(Fr::ZERO, len));
    let mut pieces = Vec::new();
    let mut rest = &mut into[..];
    for (j, w) in subs.iter().enumerate() {
        let src = &part(w)[if j == 0 { 0 } else { common }..];
        let (dst, tail) = rest.split_at_mut(src.len());
        pieces.extend(dst.chunks_mut(PIECE).zip(src.chunks(PIECE)));
        rest = tail;
    }
    pieces
        .into_par_iter()
        .for_each(|(dst, src)| dst.copy_from_slice(src));
    into
}

/// The common part's length of inputs and aux, once the runs are checked against each other
/// and the partition's shape.
fn check_runs(
    subs: &[Witness],
    counts: &[usize],
    num_inputs: usize,
    num_aux: usize,
) -> std::result::Result<(usize, usize), String> {
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
    Ok((common_i, common_a))
}

/// Errors with the first differing input index unless the witness's public inputs (ONE
/// excluded) are exactly `expected`.
pub(crate) fn check_inputs(w: &Witness, expected: &[Fr]) -> std::result::Result<(), usize> {
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
            packed: None,
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
        let joined = join_witnesses(runs, &[2, 2, 1], ni, na, Witness::default()).unwrap();
        assert_eq!(joined, whole);
        // Into the memory of an earlier witness, larger or smaller: the same.
        for spare in [witness(0..9), witness(0..1), joined] {
            let runs = vec![witness(0..1), witness(1..5)];
            assert_eq!(join_witnesses(runs, &[1, 4], ni, na, spare).unwrap(), whole);
        }
    }

    #[test]
    fn runs_that_do_not_add_up_are_refused() {
        let whole = witness(0..4);
        let (ni, na) = (whole.inputs.len(), whole.aux.len());
        // A run with one challenge too many for its count.
        let runs = vec![witness(0..2), witness(2..5)];
        assert!(join_witnesses(runs, &[2, 2], ni, na, Witness::default()).is_err());
        // A common part that differs.
        let mut other = witness(2..4);
        other.aux[0] = Fr::from(1);
        assert!(join_witnesses(
            vec![witness(0..2), other],
            &[2, 2],
            ni,
            na,
            Witness::default()
        )
        .is_err());
        // One run is no split.
        assert!(join_witnesses(vec![witness(0..4)], &[4], ni, na, Witness::default()).is_err());
    }
}
