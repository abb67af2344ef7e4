//! WinningPoSt and WindowPoSt from vanilla proofs, as filecoin-proofs'
//! `generate_winning_post_with_vanilla`, `generate_single_window_post_with_vanilla` and
//! `generate_window_post_with_vanilla` make them.

use crate::cache::CircuitId;
use crate::compound::{prove_job, CompoundJob, Job, Native, Proved, Vanilla};
use crate::error::{chain, Error, ProofKind, Result};
use crate::porep::{safe, setup_error};
use crate::Prover;
use filecoin_hashers::Hasher;
use filecoin_proofs::parameters::{window_post_setup_params, winning_post_setup_params};
use filecoin_proofs::{
    partition_vanilla_proofs, single_partition_vanilla_proofs, ChallengeSeed,
    FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType, ProverId, VanillaProof,
};
use filecoin_proofs_api::RegisteredPoStProof;
use std::marker::PhantomData;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Which of filecoin-proofs' PoSt entry points a request mirrors.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// All partitions of a WinningPoSt (always one).
    Winning,
    /// All partitions of a WindowPoSt.
    WindowAll,
    /// One partition of a WindowPoSt, the vanilla proofs being that partition's sectors.
    WindowPartition(usize),
}

impl Prover<'_> {
    /// WinningPoSt from the bincode-encoded `FallbackPoStSectorProof`s filecoin-proofs-api's
    /// `generate_single_vanilla_proof` returns (one per challenged sector).
    pub fn winning_post(
        &self,
        registered: RegisteredPoStProof,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: &[Vec<u8>],
    ) -> Result<Proved> {
        self.post_api(
            registered,
            Mode::Winning,
            randomness,
            prover_id,
            vanilla_proofs,
        )
    }

    /// One WindowPoSt partition (Curio's `WINDOW_POST_PARTITION`): the vanilla proofs of the
    /// partition's sectors, bincode-encoded; 192 bytes, which filecoin-proofs'
    /// `merge_window_post_partition_proofs` concatenates in partition order.
    pub fn window_post_partition(
        &self,
        registered: RegisteredPoStProof,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: &[Vec<u8>],
        partition_index: usize,
    ) -> Result<Proved> {
        self.post_api(
            registered,
            Mode::WindowPartition(partition_index),
            randomness,
            prover_id,
            vanilla_proofs,
        )
    }

    /// A whole WindowPoSt over the vanilla proofs of all its sectors, bincode-encoded.
    pub fn window_post(
        &self,
        registered: RegisteredPoStProof,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: &[Vec<u8>],
    ) -> Result<Proved> {
        self.post_api(
            registered,
            Mode::WindowAll,
            randomness,
            prover_id,
            vanilla_proofs,
        )
    }

    fn post_api(
        &self,
        registered: RegisteredPoStProof,
        mode: Mode,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: &[Vec<u8>],
    ) -> Result<Proved> {
        let job = post_job_bytes(
            registered,
            mode,
            randomness,
            prover_id,
            Vanilla::Each(vanilla_proofs),
            self.cache().policy().native_witness,
        )?;
        prove_job(self, &*job)
    }

    /// WinningPoSt from filecoin-proofs' vanilla proofs and PoSt configuration.
    pub fn winning_post_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoStConfig,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    ) -> Result<Proved> {
        self.post_v1(config, Mode::Winning, randomness, prover_id, vanilla_proofs)
    }

    /// One WindowPoSt partition from filecoin-proofs' vanilla proofs of its sectors.
    pub fn window_post_partition_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoStConfig,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
        partition_index: usize,
    ) -> Result<Proved> {
        self.post_v1(
            config,
            Mode::WindowPartition(partition_index),
            randomness,
            prover_id,
            vanilla_proofs,
        )
    }

    /// A whole WindowPoSt from filecoin-proofs' vanilla proofs of all its sectors.
    pub fn window_post_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoStConfig,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    ) -> Result<Proved> {
        self.post_v1(
            config,
            Mode::WindowAll,
            randomness,
            prover_id,
            vanilla_proofs,
        )
    }

    fn post_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoStConfig,
        mode: Mode,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    ) -> Result<Proved> {
        let native = self.cache().policy().native_witness;
        let job = post_job(config, mode, randomness, prover_id, vanilla_proofs, native)?;
        prove_job(self, &job)
    }

    /// The partition witnesses a PoSt of `vanilla_proofs` is proved from (WinningPoSt's, or
    /// WindowPoSt partition `partition_index`'s, as `config` says), on the cache's PCE: made
    /// natively when `native` (an error where that fails: never synthesis instead), else by
    /// synthesizing the circuit; each checked against the verifier's public inputs. For
    /// comparing the two.
    pub fn post_witnesses_v1<Tree: 'static + MerkleTreeTrait>(
        &self,
        config: &PoStConfig,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
        partition_index: usize,
        native: bool,
    ) -> Result<Vec<cuzk_synth::Witness>> {
        let mode = match config.typ {
            PoStType::Winning => Mode::Winning,
            PoStType::Window => Mode::WindowPartition(partition_index),
        };
        let job = post_job(config, mode, randomness, prover_id, vanilla_proofs, native)?;
        crate::compound::witnesses_one_way(self, &job, native)
    }
}

/// The PoSt job of one sector shape.
pub(crate) type PostJob<Tree> =
    CompoundJob<FallbackPoSt<'static, Tree>, FallbackPoStCircuit<Tree>, FallbackPoStCompound<Tree>>;

/// The partitions of a PoSt request, checked: the circuits' vanilla proofs and the public
/// inputs the verifier computes.
pub(crate) fn post_job<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    mode: Mode,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vec<FallbackPoStSectorProof<Tree>>,
    native: bool,
) -> Result<PostJob<Tree>> {
    let (kind, typ) = match mode {
        Mode::Winning => (ProofKind::WinningPost, PoStType::Winning),
        _ => (ProofKind::WindowPost, PoStType::Window),
    };
    let span = tracing::info_span!("post", %kind, sectors = vanilla_proofs.len());
    let _enter = span.enter();
    if config.typ != typ {
        return Err(Error::WrongProofType {
            kind,
            registered_proof: format!("{:?} PoSt config", config.typ),
        });
    }
    let randomness_safe: Domain<Tree> = safe("randomness", randomness)?;
    let prover_id_safe: Domain<Tree> = safe("prover_id", &prover_id)?;
    if vanilla_proofs.is_empty() {
        return Err(Error::VanillaCount {
            kind,
            what: "sector vanilla proofs (at least)".into(),
            expected: 1,
            found: 0,
        });
    }
    let rejected = |e: anyhow::Error| Error::VanillaRejected {
        kind,
        message: chain(&e),
    };

    let (vanilla_params, partitions) = match mode {
        Mode::Winning => {
            if vanilla_proofs.len() != config.sector_count {
                return Err(Error::VanillaCount {
                    kind,
                    what: "sector vanilla proofs".into(),
                    expected: config.sector_count,
                    found: vanilla_proofs.len(),
                });
            }
            let params = winning_post_setup_params(config).map_err(|e| setup_error(kind, e))?;
            (params, None)
        }
        Mode::WindowAll | Mode::WindowPartition(_) => {
            let n = vanilla_proofs.len().div_ceil(config.sector_count);
            (window_post_setup_params(config), (n > 1).then_some(n))
        }
    };
    if let Mode::WindowPartition(_) = mode {
        if vanilla_proofs.len() > config.sector_count {
            return Err(Error::VanillaCount {
                kind,
                what: "sector vanilla proofs in one partition (at most)".into(),
                expected: config.sector_count,
                found: vanilla_proofs.len(),
            });
        }
    }
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: config.priority,
    };
    let pub_params: compound_proof::PublicParams<'_, FallbackPoSt<'_, Tree>> =
        FallbackPoStCompound::setup(&setup).map_err(|e| setup_error(kind, e))?;
    let sectors: Vec<PublicSector<Domain<Tree>>> = vanilla_proofs
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect();
    let pub_inputs = fallback::PublicInputs {
        randomness: randomness_safe,
        prover_id: prover_id_safe,
        sectors,
        k: match mode {
            Mode::WindowPartition(p) => Some(p),
            _ => None,
        },
    };
    let vp = &pub_params.vanilla_params;
    let circuit_proofs: Vec<VanillaProof<Tree>> = match mode {
        Mode::WindowPartition(_) => {
            vec![
                single_partition_vanilla_proofs(config, vp, &pub_inputs, &vanilla_proofs)
                    .map_err(rejected)?,
            ]
        }
        _ => partition_vanilla_proofs(
            config,
            vp,
            &pub_inputs,
            partitions.unwrap_or(1),
            &vanilla_proofs,
        )
        .map_err(rejected)?,
    };

    // The public inputs are computed exactly as filecoin-proofs' verifiers compute them.
    // WinningPoSt's verifier lists the sectors once per circuit slot (the circuit proves
    // each challenge of the sector as its own slot). WindowPoSt's verifies a partition
    // against all sectors, partition p holding sectors p·n.. (n per partition); a lone
    // partition's sectors are placed there.
    let verifier_inputs = match mode {
        Mode::Winning => {
            let mut repeated = pub_inputs.clone();
            repeated.sectors = (0..vp.sector_count)
                .flat_map(|_| pub_inputs.sectors.iter().cloned())
                .collect();
            (repeated, 0)
        }
        Mode::WindowPartition(p) => {
            let mut padded = pub_inputs.clone();
            let pad = padded.sectors[0].clone();
            let mut sectors = vec![pad; p * vp.sector_count];
            sectors.extend(pub_inputs.sectors.iter().cloned());
            padded.sectors = sectors;
            padded.k = None;
            (padded, p)
        }
        Mode::WindowAll => (pub_inputs.clone(), 0),
    };

    let id = post_id::<Tree>(kind, config, vp);
    Ok(CompoundJob {
        id,
        pub_in: pub_inputs,
        verifier_in: verifier_inputs.0,
        offset: verifier_inputs.1,
        vanilla: circuit_proofs,
        pub_params: pub_params.vanilla_params,
        // The circuit parallelizes its sectors itself (it extends its constraint system).
        split: None,
        native: native.then_some(Native {
            make: post_native::<Tree>,
            packs: false,
        }),
        record: None,
        _marker: PhantomData,
    })
}

/// A PoSt partition's witness made natively (`cuzk_native::post_partition_witness`: every
/// value computed directly), into `cs`.
fn post_native<Tree: 'static + MerkleTreeTrait>(
    pub_in: &fallback::PublicInputs<Domain<Tree>>,
    pub_params: &fallback::PublicParams,
    k: usize,
    proof: &fallback::Proof<Tree::Proof>,
    cs: &mut cuzk_synth::WitnessCs,
) -> std::result::Result<(), String> {
    cuzk_native::post_partition_witness::<Tree>(pub_in, pub_params, k, proof, cs)
        .map_err(|e| e.to_string())
}

/// The id of the PoSt circuit of `config` with public parameters `vp`.
fn post_id<Tree: 'static + MerkleTreeTrait>(
    kind: ProofKind,
    config: &PoStConfig,
    vp: &fallback::PublicParams,
) -> CircuitId {
    CircuitId {
        kind,
        cache_id: <FallbackPoStCompound<Tree> as CacheableParameters<
            FallbackPoStCircuit<Tree>,
            _,
        >>::cache_identifier(vp),
        sector_size: u64::from(config.sector_size),
    }
}

/// The PoSt circuit of `config` (one partition's: what WinningPoSt and every WindowPoSt
/// partition prove), for loading ahead of any request.
pub(crate) fn post_preload<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
) -> Result<crate::compound::Preload> {
    let kind = match config.typ {
        PoStType::Winning => ProofKind::WinningPost,
        _ => ProofKind::WindowPost,
    };
    let vanilla_params = match config.typ {
        PoStType::Winning => winning_post_setup_params(config).map_err(|e| setup_error(kind, e))?,
        _ => window_post_setup_params(config),
    };
    let setup = compound_proof::SetupParams {
        vanilla_params,
        partitions: None,
        priority: config.priority,
    };
    let pub_params: compound_proof::PublicParams<'static, FallbackPoSt<'static, Tree>> =
        FallbackPoStCompound::setup(&setup).map_err(|e| setup_error(kind, e))?;
    let id = post_id::<Tree>(kind, config, &pub_params.vanilla_params);
    let vp = pub_params.vanilla_params;
    Ok(crate::compound::preload(id, move || {
        FallbackPoStCompound::<Tree>::blank_circuit(&vp)
    }))
}

/// The PoSt job of serialized vanilla proofs for `registered`'s sector shape.
pub(crate) fn post_job_bytes(
    registered: RegisteredPoStProof,
    mode: Mode,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: Vanilla<'_>,
    native: bool,
) -> Result<Box<dyn Job>> {
    let (kind, typ) = match mode {
        Mode::Winning => (ProofKind::WinningPost, PoStType::Winning),
        _ => (ProofKind::WindowPost, PoStType::Window),
    };
    if registered.typ() != typ {
        return Err(Error::WrongProofType {
            kind,
            registered_proof: format!("{registered:?}"),
        });
    }
    fn boxed<Tree: 'static + MerkleTreeTrait>(
        config: &PoStConfig,
        mode: Mode,
        randomness: &ChallengeSeed,
        prover_id: ProverId,
        vanilla_proofs: Vanilla<'_>,
        kind: ProofKind,
        native: bool,
    ) -> Result<Box<dyn Job>> {
        let proofs = vanilla_proofs.decode::<FallbackPoStSectorProof<Tree>>(kind)?;
        Ok(Box::new(post_job(
            config, mode, randomness, prover_id, proofs, native,
        )?))
    }
    let config = registered.as_v1_config();
    crate::with_shape!(
        u64::from(registered.sector_size()),
        boxed,
        &config,
        mode,
        randomness,
        prover_id,
        vanilla_proofs,
        kind,
        native
    )
}
