//! PoRep commit phase 2 (C2): from the C1 output Lotus/Curio send to the proof bytes
//! filecoin-proofs' `seal_commit_phase2` returns.

use crate::adapter::Sequential;
use crate::cache::{CircuitId, CircuitKeys, ParamCache};
use crate::compound::{prove_job, CompoundJob, Job, Native, Proved, Runs};
use crate::error::{chain, Error, ProofKind, Result};
use crate::ids::hex;
use crate::Prover;
use base64::Engine as _;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    as_safe_commitment, DefaultPieceDomain, DefaultPieceHasher, MerkleTreeTrait, PoRepConfig,
    ProverId, SealCommitPhase1Output, SectorShape2KiB, SectorShape32GiB, SectorShape512MiB,
    SectorShape64GiB, SectorShape8MiB,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output as ApiC1, VanillaSealProof};
use serde::Deserialize;
use std::marker::PhantomData;
use std::sync::Arc;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, StackedCircuit, StackedCompound, StackedDrg,
};

/// Curio's envelope around the C1 output: Go marshals `[]byte` as base64, so the
/// filecoin-proofs-api JSON sits base64-encoded in `Phase1Out`.
#[derive(Debug, Deserialize)]
struct CurioC1 {
    #[serde(rename = "SectorNum")]
    _sector_num: Option<u64>,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

/// How far into the JSON the envelope's key is looked for: it is the envelope's second
/// field, while a bare C1 output starts with `registered_proof` and never names it.
const ENVELOPE_PROBE: usize = 1024;
/// The envelope's key, quoted as it appears in the JSON.
const ENVELOPE_KEY: &[u8] = b"\"Phase1Out\"";

/// Decodes a C1 output: filecoin-proofs-api's `SealCommitPhase1Output` JSON, bare or inside
/// Curio's `{"SectorNum", "Phase1Out", "SectorSize"}` envelope.
pub fn decode_c1(json: &[u8]) -> Result<ApiC1> {
    let probe = &json[..json.len().min(ENVELOPE_PROBE)];
    if !probe.windows(ENVELOPE_KEY.len()).any(|w| w == ENVELOPE_KEY) {
        let c1: ApiC1 = from_json(json)?;
        check_c1_size(&c1)?;
        return Ok(c1);
    }
    let envelope: CurioC1 = from_json(json)?;
    let inner = base64::engine::general_purpose::STANDARD
        .decode(envelope.phase1_out.as_bytes())
        .map_err(|e| Error::C1Base64 {
            len: envelope.phase1_out.len(),
            message: e.to_string(),
        })?;
    let c1: ApiC1 = from_json(&inner)?;
    check_c1_size(&c1)?;
    let expected = u64::from(c1.registered_proof.sector_size());
    if let Some(found) = envelope.sector_size.filter(|&s| s != expected) {
        return Err(Error::SectorSizeMismatch {
            what: "Curio C1 envelope's SectorSize",
            registered_proof: format!("{:?}", c1.registered_proof),
            expected,
            found,
        });
    }
    Ok(c1)
}

fn from_json<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T> {
    serde_json::from_slice(json).map_err(|e| Error::C1Json {
        len: json.len(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

fn vanilla_sector_size(v: &VanillaSealProof) -> u64 {
    use filecoin_proofs::constants::*;
    match v {
        VanillaSealProof::StackedDrg2KiBV1(_) => SECTOR_SIZE_2_KIB,
        VanillaSealProof::StackedDrg8MiBV1(_) => SECTOR_SIZE_8_MIB,
        VanillaSealProof::StackedDrg512MiBV1(_) => SECTOR_SIZE_512_MIB,
        VanillaSealProof::StackedDrg32GiBV1(_) => SECTOR_SIZE_32_GIB,
        VanillaSealProof::StackedDrg64GiBV1(_) => SECTOR_SIZE_64_GIB,
    }
}

fn check_c1_size(c1: &ApiC1) -> Result<()> {
    let expected = u64::from(c1.registered_proof.sector_size());
    let found = vanilla_sector_size(&c1.vanilla_proofs);
    if expected != found {
        return Err(Error::SectorSizeMismatch {
            what: "C1 vanilla proofs",
            registered_proof: format!("{:?}", c1.registered_proof),
            expected,
            found,
        });
    }
    Ok(())
}

/// Rebuilds filecoin-proofs' C1 output for one sector shape from the API's.
macro_rules! c1_v1 {
    ($c1:ident, $proofs:expr) => {
        SealCommitPhase1Output {
            vanilla_proofs: $proofs,
            comm_r: $c1.comm_r,
            comm_d: $c1.comm_d,
            replica_id: $c1.replica_id,
            seed: $c1.seed,
            ticket: $c1.ticket,
        }
    };
}

impl Prover<'_> {
    /// PoRep C2 from a C1 output (filecoin-proofs-api's `SealCommitPhase1Output` JSON, bare
    /// or in Curio's envelope) for the registered proof it names: the proof bytes equal in
    /// layout to filecoin-proofs' `seal_commit_phase2` (192 bytes per partition, in order;
    /// for NI-PoRep, the aggregate).
    pub fn seal_commit_phase2(
        &self,
        c1_json: &[u8],
        prover_id: ProverId,
        sector_id: u64,
    ) -> Result<Proved> {
        let c1 = decode_c1(c1_json)?;
        self.seal_commit_phase2_api(c1, prover_id, sector_id)
    }

    /// [`Prover::seal_commit_phase2`] from an already decoded C1 output.
    pub fn seal_commit_phase2_api(
        &self,
        c1: ApiC1,
        prover_id: ProverId,
        sector_id: u64,
    ) -> Result<Proved> {
        check_c1_size(&c1)?;
        let config = c1.registered_proof.as_v1_config();
        match c1.vanilla_proofs {
            VanillaSealProof::StackedDrg2KiBV1(p) => self.seal_commit_phase2_v1::<SectorShape2KiB>(
                &config,
                c1_v1!(c1, p),
                prover_id,
                sector_id,
            ),
            VanillaSealProof::StackedDrg8MiBV1(p) => self.seal_commit_phase2_v1::<SectorShape8MiB>(
                &config,
                c1_v1!(c1, p),
                prover_id,
                sector_id,
            ),
            VanillaSealProof::StackedDrg512MiBV1(p) => self
                .seal_commit_phase2_v1::<SectorShape512MiB>(
                    &config,
                    c1_v1!(c1, p),
                    prover_id,
                    sector_id,
                ),
            VanillaSealProof::StackedDrg32GiBV1(p) => self
                .seal_commit_phase2_v1::<SectorShape32GiB>(
                    &config,
                    c1_v1!(c1, p),
                    prover_id,
                    sector_id,
                ),
            VanillaSealProof::StackedDrg64GiBV1(p) => self
                .seal_commit_phase2_v1::<SectorShape64GiB>(
                    &config,
                    c1_v1!(c1, p),
                    prover_id,
                    sector_id,
                ),
        }
    }

    /// PoRep C2 from filecoin-proofs' own C1 output and PoRep configuration (any sector
    /// shape, PoRep id and API version), as filecoin-proofs' `seal_commit_phase2` does it.
    pub fn seal_commit_phase2_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoRepConfig,
        c1: SealCommitPhase1Output<Tree>,
        prover_id: ProverId,
        sector_id: u64,
    ) -> Result<Proved> {
        let span = tracing::info_span!(
            "seal_commit_phase2",
            sector_id,
            sector_size = u64::from(config.sector_size)
        );
        let _enter = span.enter();
        // NI-PoRep's job aggregates its partition proofs (`NiPoRepJob::finish`).
        let native = self.cache().policy().native_witness;
        let job = porep_job_boxed::<Tree>(config, c1, prover_id, sector_id, native)?;
        prove_job(self, &*job)
    }
}

impl Prover<'_> {
    /// The partition witnesses a PoRep C2 of `c1` is proved from (as
    /// [`Prover::seal_commit_phase2_v1`] makes them, on the cache's PCE), made natively when
    /// `native` (an error where that fails: never synthesis instead), else by synthesizing
    /// the circuit; each checked against the verifier's public inputs. For comparing the two.
    pub fn porep_witnesses_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoRepConfig,
        c1: SealCommitPhase1Output<Tree>,
        prover_id: ProverId,
        sector_id: u64,
        native: bool,
    ) -> Result<Vec<cuzk_synth::Witness>> {
        let job = porep_job::<Tree>(config, c1, prover_id, sector_id, native)?;
        crate::compound::witnesses_one_way(self, &job, native)
    }
}

/// The PoRep job of a C1 output: its partitions, and for NI-PoRep the aggregation of their
/// proofs into the seal proof, as filecoin-proofs' `seal_commit_phase2` makes it.
fn porep_job_boxed<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: u64,
    native: bool,
) -> Result<Box<dyn Job>> {
    if !config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Ok(Box::new(porep_job::<Tree>(
            config, c1, prover_id, sector_id, native,
        )?));
    }
    if config.api_version < ApiFeature::NonInteractivePoRep.first_supported_version() {
        return Err(Error::FilecoinProofs {
            kind: ProofKind::PoRep,
            step: "NI-PoRep aggregation",
            message: format!(
                "API version {} does not support NI-PoRep",
                config.api_version
            ),
        });
    }
    let comm_r = c1.comm_r;
    Ok(Box::new(NiPoRepJob {
        inner: porep_job::<Tree>(config, c1, prover_id, sector_id, native)?,
        comm_r,
    }))
}

/// A NI-PoRep: the PoRep circuit's partitions (13 for 2KiB to 1GiB sectors, 126 for 32GiB
/// and 64GiB, as filecoin-proofs sets them), whose proofs become one SnarkPack aggregate.
struct NiPoRepJob<Tree: 'static + MerkleTreeTrait> {
    inner: PoRepJob<Tree>,
    comm_r: [u8; 32],
}

impl<Tree: 'static + MerkleTreeTrait> Job for NiPoRepJob<Tree> {
    fn id(&self) -> &CircuitId {
        self.inner.id()
    }

    fn partitions(&self) -> usize {
        self.inner.partitions()
    }

    fn load(&self, cache: &ParamCache) -> Result<Arc<CircuitKeys>> {
        self.inner.load(cache)
    }

    fn record(&self) -> std::result::Result<cuzk_synth::Pce, cuzk_synth::SynthError> {
        self.inner.record()
    }

    fn public_inputs(&self, k: usize) -> anyhow::Result<Vec<blstrs::Scalar>> {
        self.inner.public_inputs(k)
    }

    fn witness(
        &self,
        pce: &cuzk_synth::Pce,
        k: usize,
        spare: cuzk_synth::Witness,
    ) -> Result<cuzk_synth::Witness> {
        self.inner.witness(pce, k, spare)
    }

    fn splits(&self) -> bool {
        self.inner.splits()
    }

    fn finishes(&self) -> bool {
        true
    }

    fn finish(
        &self,
        cache: &ParamCache,
        proofs: &[cuzk_groth16::Proof],
        inputs: &[Vec<blstrs::Scalar>],
    ) -> Result<Vec<u8>> {
        crate::ni::aggregate(cache, self.inner.id(), &self.comm_r, proofs, inputs)
    }
}

/// The PoRep circuit's partitions of a C1 output, checked against the request (partition and
/// challenge counts, commitments, the replica id the verifier derives); `native` makes their
/// witnesses with cuzk-native's generator rather than by synthesizing the circuit.
pub(crate) fn porep_job<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    c1: SealCommitPhase1Output<Tree>,
    prover_id: ProverId,
    sector_id: u64,
    native: bool,
) -> Result<PoRepJob<Tree>> {
    let SealCommitPhase1Output {
        vanilla_proofs,
        comm_r,
        comm_d,
        replica_id,
        seed,
        ticket,
    } = c1;
    nonzero("comm_d", &comm_d)?;
    nonzero("comm_r", &comm_r)?;
    nonzero("seed", &seed)?;
    let comm_r_safe: <Tree::Hasher as Hasher>::Domain = safe("comm_r", &comm_r)?;
    let comm_d_safe =
        DefaultPieceDomain::try_from_bytes(&comm_d).map_err(|_| Error::InvalidCommitment {
            name: "comm_d",
            hex: hex(&comm_d),
            reason: "not a canonical field element",
        })?;
    let partitions = usize::from(config.partitions);
    let kind = ProofKind::PoRep;
    if vanilla_proofs.len() != partitions {
        return Err(Error::VanillaCount {
            kind,
            what: "partitions of vanilla proofs".into(),
            expected: partitions,
            found: vanilla_proofs.len(),
        });
    }
    let (id, pub_params) = porep_circuit::<Tree>(config)?;
    let per_partition = pub_params
        .vanilla_params
        .challenges
        .num_challenges_per_partition();
    for (k, p) in vanilla_proofs.iter().enumerate() {
        if p.len() != per_partition {
            return Err(Error::VanillaCount {
                kind,
                what: format!("challenges in partition {k}"),
                expected: per_partition,
                found: p.len(),
            });
        }
    }

    // The verifier derives the replica id from the request; a C1 output of another
    // sector (or prover) cannot verify, so say so before proving.
    let derived = generate_replica_id::<Tree::Hasher, _>(
        &prover_id,
        sector_id,
        &ticket,
        comm_d,
        &config.porep_id,
    );
    if derived != replica_id {
        return Err(Error::ReplicaIdMismatch {
            in_c1: hex(replica_id.as_ref()),
            derived: hex(derived.as_ref()),
            prover_id: hex(&prover_id),
            sector_id,
        });
    }

    let public_inputs = stacked::PublicInputs {
        replica_id,
        tau: Some(stacked::Tau {
            comm_d: comm_d_safe,
            comm_r: comm_r_safe,
        }),
        k: None,
        seed: Some(seed),
    };
    check_vanilla(&pub_params.vanilla_params, &public_inputs, &vanilla_proofs)?;
    Ok(CompoundJob {
        id,
        verifier_in: public_inputs.clone(),
        pub_in: public_inputs,
        offset: 0,
        vanilla: vanilla_proofs,
        pub_params: pub_params.vanilla_params,
        split: Some(porep_runs::<Tree>),
        native: native.then_some(Native {
            make: porep_native::<Tree>,
            packs: true,
        }),
        record: Some(record_porep::<Tree>),
        _marker: PhantomData,
    })
}

/// Checks a C1 output's vanilla proofs before anything is synthesized, naming what is wrong:
/// each proof must open the challenge the seed and replica id derive (a C1 output with a
/// stale `seed` fails here), every partition must open `comm_r` and `comm_d`, and then
/// filecoin-proofs' vanilla verification of each challenge must pass (labels, columns,
/// Merkle paths, encoding).
fn check_vanilla<Tree: 'static + MerkleTreeTrait>(
    pub_params: &stacked::PublicParams<Tree>,
    pub_inputs: &stacked::PublicInputs<
        <Tree::Hasher as Hasher>::Domain,
        <DefaultPieceHasher as Hasher>::Domain,
    >,
    partitions: &[Vec<stacked::Proof<Tree, DefaultPieceHasher>>],
) -> Result<()> {
    use filecoin_hashers::HashFunction;
    use rayon::prelude::*;
    use storage_proofs_core::drgraph::Graph;
    use storage_proofs_core::merkle::MerkleProofTrait;
    let rejected = |message: String| Error::VanillaRejected {
        kind: ProofKind::PoRep,
        message,
    };
    let Some(tau) = &pub_inputs.tau else {
        return Err(rejected("no comm_r and comm_d to check against".into()));
    };
    let nodes = pub_params.graph.size();
    partitions
        .par_iter()
        .enumerate()
        .try_for_each(|(k, proofs)| {
            let challenges = pub_inputs.challenges(&pub_params.challenges, nodes, Some(k));
            for (i, (proof, &challenge)) in proofs.iter().zip(&challenges).enumerate() {
                if !proof.comm_d_proofs.proves_challenge(challenge) {
                    let seed = pub_inputs.seed.map(|s| hex(&s)).unwrap_or_default();
                    return Err(rejected(format!(
                        "seed {seed} derives node {challenge} for partition {k}'s challenge \
                         {i}, but the vanilla proof opens node {}: the C1 output was made \
                         with another seed (or replica id)",
                        proof.comm_d_proofs.path_index()
                    )));
                }
                let comm_r = <Tree::Hasher as Hasher>::Function::hash2(
                    &proof.comm_c(),
                    &proof.comm_r_last(),
                );
                if comm_r != tau.comm_r {
                    return Err(rejected(format!(
                        "comm_r is {}, but partition {k}'s challenge {i} opens comm_r {}",
                        hex(tau.comm_r.into_bytes().as_slice()),
                        hex(comm_r.into_bytes().as_slice())
                    )));
                }
                if proof.comm_d_proofs.root() != tau.comm_d {
                    return Err(rejected(format!(
                        "comm_d is {}, but partition {k}'s challenge {i} opens comm_d {}",
                        hex(tau.comm_d.into_bytes().as_slice()),
                        hex(proof.comm_d_proofs.root().into_bytes().as_slice())
                    )));
                }
            }
            let bad = proofs
                .par_iter()
                .zip(challenges.par_iter())
                .position_any(|(proof, &c)| {
                    !proof.verify(pub_params, pub_inputs, c, &pub_params.graph)
                });
            match bad {
                None => Ok(()),
                Some(i) => Err(rejected(format!(
                    "partition {k}'s challenge {i} does not verify (its labels, columns or \
                     Merkle paths are not the sector's)"
                ))),
            }
        })
}

/// The PoRep job of one sector shape.
pub(crate) type PoRepJob<Tree> = CompoundJob<
    StackedDrg<'static, Tree, DefaultPieceHasher>,
    StackedCircuit<Tree, DefaultPieceHasher>,
    StackedCompound<Tree, DefaultPieceHasher>,
>;

/// The stacked circuit synthesizes its challenges one after another; with cores to spare,
/// runs of them are synthesized in parallel and joined.
#[allow(clippy::ptr_arg)] // a `SplitFn`: the scheme's proof type is the `Vec` itself
fn porep_runs<Tree: 'static + MerkleTreeTrait>(
    pub_in: &stacked::PublicInputs<
        <Tree::Hasher as Hasher>::Domain,
        <DefaultPieceHasher as Hasher>::Domain,
    >,
    vanilla_params: &stacked::PublicParams<Tree>,
    k: usize,
    vanilla: &Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    partitions: usize,
) -> Option<Runs<StackedCircuit<Tree, DefaultPieceHasher>>> {
    let runs = challenge_runs(partitions, vanilla.len());
    let size = vanilla.len().div_ceil(runs);
    if runs < 2 || size >= vanilla.len() {
        return None;
    }
    // A run whose circuit cannot be built makes the partition synthesize whole.
    vanilla
        .chunks(size)
        .map(|run| {
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::circuit(pub_in, (), &run.to_vec(), vanilla_params, Some(k))
            .ok()
            .map(|c| (c, run.len()))
        })
        .collect()
}

/// A partition's witness made natively (`cuzk_native::porep_partition_witness`: the SHA-256,
/// bit decomposition and Poseidon parts computed directly, about 80 times faster than the
/// circuit's gadgets at 32GiB), into `cs`.
#[allow(clippy::ptr_arg)] // a `NativeFn`: the scheme's proof type is the `Vec` itself
fn porep_native<Tree: 'static + MerkleTreeTrait>(
    pub_in: &stacked::PublicInputs<
        <Tree::Hasher as Hasher>::Domain,
        <DefaultPieceHasher as Hasher>::Domain,
    >,
    _: &stacked::PublicParams<Tree>,
    _: usize,
    vanilla: &Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    cs: &mut cuzk_synth::WitnessCs,
) -> std::result::Result<(), String> {
    cuzk_native::porep_partition_witness::<Tree>(pub_in, vanilla, cs).map_err(|e| e.to_string())
}

/// The PoRep job of a decoded C1 output (any sector shape), for the scheduler's kind: for
/// NI-PoRep, a job whose partition proofs the scheduler hands back for aggregation
/// ([`Job::finish`]).
pub(crate) fn porep_job_api(
    c1: ApiC1,
    prover_id: ProverId,
    sector_id: u64,
    native: bool,
) -> Result<Box<dyn Job>> {
    check_c1_size(&c1)?;
    let config = c1.registered_proof.as_v1_config();
    match c1.vanilla_proofs {
        VanillaSealProof::StackedDrg2KiBV1(p) => {
            porep_job_boxed::<SectorShape2KiB>(&config, c1_v1!(c1, p), prover_id, sector_id, native)
        }
        VanillaSealProof::StackedDrg8MiBV1(p) => {
            porep_job_boxed::<SectorShape8MiB>(&config, c1_v1!(c1, p), prover_id, sector_id, native)
        }
        VanillaSealProof::StackedDrg512MiBV1(p) => porep_job_boxed::<SectorShape512MiB>(
            &config,
            c1_v1!(c1, p),
            prover_id,
            sector_id,
            native,
        ),
        VanillaSealProof::StackedDrg32GiBV1(p) => porep_job_boxed::<SectorShape32GiB>(
            &config,
            c1_v1!(c1, p),
            prover_id,
            sector_id,
            native,
        ),
        VanillaSealProof::StackedDrg64GiBV1(p) => porep_job_boxed::<SectorShape64GiB>(
            &config,
            c1_v1!(c1, p),
            prover_id,
            sector_id,
            native,
        ),
    }
}

/// Into how many runs each partition's challenges are split for synthesis: the threads its
/// caller gives one partition ([`cuzk_plugin::share`]: under the scheduler, the CPU pool
/// divided by the partitions synthesizing at once, so that a 32GiB job's 10 partitions,
/// synthesized two at a time, use every core); elsewhere the pool divided by the job's
/// partitions, which then synthesize all at once. One run when the partitions alone keep the
/// cores busy; at most one run per challenge.
fn challenge_runs(partitions: usize, challenges: usize) -> usize {
    let threads = cuzk_plugin::share::synthesis_share()
        .unwrap_or_else(|| rayon::current_num_threads() / partitions.max(1));
    threads.clamp(1, challenges.max(1))
}

/// filecoin-proofs' compound public parameters of a PoRep circuit.
type PoRepParams<'a, Tree> =
    compound_proof::PublicParams<'a, StackedDrg<'a, Tree, DefaultPieceHasher>>;

/// The PoRep circuit of `config`: its id and filecoin-proofs' public parameters, as
/// `seal_commit_phase2` sets them up.
fn porep_circuit<'a, Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<(CircuitId, PoRepParams<'a, Tree>)> {
    let kind = ProofKind::PoRep;
    let setup = compound_proof::SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(config)
            .map_err(|e| setup_error(kind, e))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    let pub_params = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'a, Tree, DefaultPieceHasher>,
        _,
    >>::setup(&setup)
    .map_err(|e| setup_error(kind, e))?;
    let id = CircuitId {
        kind,
        cache_id: <StackedCompound<Tree, DefaultPieceHasher> as CacheableParameters<
            StackedCircuit<Tree, DefaultPieceHasher>,
            _,
        >>::cache_identifier(&pub_params.vanilla_params),
        sector_size: u64::from(config.sector_size),
    };
    Ok((id, pub_params))
}

impl CircuitId {
    /// The PoRep circuit of `config` (its parameter files' names follow from it).
    pub fn porep<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<CircuitId> {
        porep_circuit::<Tree>(config).map(|(id, _)| id)
    }

    /// [`CircuitId::porep`] for the shape of `config`'s sector size.
    pub fn porep_of(config: &PoRepConfig) -> Result<CircuitId> {
        crate::with_shape!(u64::from(config.sector_size), porep_id_shaped, config)
    }
}

fn porep_id_shaped<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<CircuitId> {
    CircuitId::porep::<Tree>(config)
}

impl ParamCache {
    /// The PCE of the PoRep circuit of `config` (any registered sector size) alone, without
    /// its parameters: loaded from this cache's file, or recorded (and saved when the policy
    /// keeps PCEs on disk) exactly as a first [`ParamCache::load_porep`] does. For measuring the
    /// recording and for preparing a cache's PCE ahead of a run.
    pub fn porep_pce(&self, config: &PoRepConfig) -> Result<(CircuitId, cuzk_synth::Pce)> {
        crate::with_shape!(
            u64::from(config.sector_size),
            porep_pce_shaped,
            self,
            config
        )
    }

    /// Loads the PoRep circuit of `config` ahead of the first C2 (which then finds it
    /// loaded): parameters, PCE and verifying key, generated or recorded where the policy
    /// allows, exactly as a C2 request would.
    pub fn load_porep<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoRepConfig,
    ) -> Result<Arc<CircuitKeys>> {
        let (id, pub_params) = porep_circuit::<Tree>(config)?;
        self.circuit_recorded(&id, || record_porep(&pub_params.vanilla_params))
    }
}

fn porep_pce_shaped<Tree: 'static + MerkleTreeTrait>(
    cache: &ParamCache,
    config: &PoRepConfig,
) -> Result<(CircuitId, cuzk_synth::Pce)> {
    let (id, pub_params) = porep_circuit::<Tree>(config)?;
    let pce = cache.pce(&id, || record_porep(&pub_params.vanilla_params))?;
    Ok((id, pce))
}

/// The PCE of the PoRep circuit of `vanilla_params`, its challenges recorded in parallel runs
/// when there are threads to spare ([`Pce::record_runs`]: the same PCE as recording the
/// blank circuit whole, which it falls back to should the runs not join).
fn record_porep<Tree: 'static + MerkleTreeTrait>(
    vanilla_params: &stacked::PublicParams<Tree>,
) -> std::result::Result<cuzk_synth::Pce, cuzk_synth::SynthError> {
    record_porep_in(vanilla_params, rayon::current_num_threads())
}

/// [`record_porep`] in at most `threads` runs.
fn record_porep_in<Tree: 'static + MerkleTreeTrait>(
    vanilla_params: &stacked::PublicParams<Tree>,
    threads: usize,
) -> std::result::Result<cuzk_synth::Pce, cuzk_synth::SynthError> {
    let challenges = vanilla_params.challenges.num_challenges_per_partition();
    let blank = |k: usize| porep_blank(vanilla_params, k);
    let runs = threads.min(challenges);
    if runs < 2 {
        return cuzk_synth::Pce::record(blank(challenges));
    }
    let counts: Vec<usize> = (0..runs)
        .map(|j| challenges / runs + usize::from(j < challenges % runs))
        .collect();
    let circuits = counts.iter().map(|&k| (blank(k), k)).collect();
    match cuzk_synth::Pce::record_runs(blank(0), circuits) {
        Err(cuzk_synth::SynthError::RunsDiffer { reason }) => {
            tracing::warn!(%reason, "the PoRep circuit's challenges did not record apart; recording it whole");
            cuzk_synth::Pce::record(blank(challenges))
        }
        recorded => recorded,
    }
}

/// The blank PoRep circuit of `vanilla_params` with `k` challenges per partition instead of
/// its own count, as the parameters' recording sees it.
fn porep_blank<Tree: 'static + MerkleTreeTrait>(
    vanilla_params: &stacked::PublicParams<Tree>,
    k: usize,
) -> Sequential<StackedCircuit<Tree, DefaultPieceHasher>> {
    let mut params = vanilla_params.clone();
    params.challenges = with_count(&vanilla_params.challenges, k);
    Sequential(
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            StackedCircuit<Tree, DefaultPieceHasher>,
        >>::blank_circuit(&params),
    )
}

/// `challenges` with `k` challenges per partition, of the same kind.
fn with_count(challenges: &stacked::Challenges, k: usize) -> stacked::Challenges {
    match challenges {
        stacked::Challenges::Interactive(_) => stacked::Challenges::new_interactive(k),
        stacked::Challenges::Synth(_) => stacked::Challenges::new_synthetic(k),
        stacked::Challenges::Ni(_) => stacked::Challenges::new_non_interactive(k),
    }
}

/// The PoRep circuit of `config`, for loading ahead of any request.
pub(crate) fn porep_preload<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<crate::compound::Preload> {
    let id = CircuitId::porep::<Tree>(config)?;
    let config = config.clone();
    Ok((id, Box::new(move |cache| cache.load_porep::<Tree>(&config))))
}

pub(crate) fn setup_error(kind: ProofKind, e: anyhow::Error) -> Error {
    Error::FilecoinProofs {
        kind,
        step: "public parameter setup",
        message: chain(&e),
    }
}

pub(crate) fn nonzero(name: &'static str, bytes: &[u8; 32]) -> Result<()> {
    if bytes.iter().all(|&b| b == 0) {
        return Err(Error::InvalidCommitment {
            name,
            hex: hex(bytes),
            reason: "all zeros",
        });
    }
    Ok(())
}

/// A 32-byte value as a field-element domain, as filecoin-proofs' `as_safe_commitment`.
pub(crate) fn safe<D: Domain>(name: &'static str, bytes: &[u8; 32]) -> Result<D> {
    as_safe_commitment(bytes, name).map_err(|_| Error::InvalidCommitment {
        name,
        hex: hex(bytes),
        reason: "not a canonical field element",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_splits_into_the_threads_its_caller_gives_it() {
        use cuzk_plugin::share::with_synthesis_share;
        // Under the scheduler: its share, whatever the job's partition count.
        assert_eq!(with_synthesis_share(8, || challenge_runs(10, 18)), 8);
        assert_eq!(with_synthesis_share(8, || challenge_runs(1, 2)), 2);
        assert_eq!(with_synthesis_share(1, || challenge_runs(1, 18)), 1);
        // Elsewhere: the pool divided by the partitions, all synthesized at once.
        let threads = rayon::current_num_threads();
        assert_eq!(challenge_runs(10, 18), (threads / 10).clamp(1, 18));
        assert_eq!(challenge_runs(1, 2), threads.clamp(1, 2));
    }

    /// The 2KiB PoRep circuit (two challenges) recorded in two runs is the circuit recorded
    /// whole, the way its parameters were made.
    #[test]
    fn porep_recorded_in_runs_is_the_whole_circuits_pce() {
        let config = filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1.as_v1_config();
        let (_, pp) = porep_circuit::<SectorShape2KiB>(&config).unwrap();
        let vanilla = &pp.vanilla_params;
        assert_eq!(vanilla.challenges.num_challenges_per_partition(), 2);
        let whole = cuzk_synth::Pce::record(Sequential(<StackedCompound<
            SectorShape2KiB,
            DefaultPieceHasher,
        > as CompoundProof<
            StackedDrg<'_, SectorShape2KiB, DefaultPieceHasher>,
            StackedCircuit<SectorShape2KiB, DefaultPieceHasher>,
        >>::blank_circuit(vanilla)))
        .unwrap();
        // The runs themselves (record_porep_in would fall back to the whole circuit).
        let runs = cuzk_synth::Pce::record_runs(
            porep_blank(vanilla, 0),
            vec![(porep_blank(vanilla, 1), 1), (porep_blank(vanilla, 1), 1)],
        )
        .unwrap();
        assert_eq!(runs, whole);
        assert_eq!(record_porep_in(vanilla, 2).unwrap(), whole);
        assert_eq!(record_porep_in(vanilla, 1).unwrap(), whole);
    }
}
