//! SnapDeals (empty sector update) proofs from partition vanilla proofs, as filecoin-proofs'
//! `generate_empty_sector_update_proof_with_vanilla` makes them.

use crate::cache::CircuitId;
use crate::compound::{prove_job, CompoundJob, Job, Native, Proved, Vanilla};
use crate::error::{Error, ProofKind, Result};
use crate::ids::hex;
use crate::porep::nonzero;
use crate::Prover;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::{
    Commitment, DefaultPieceDomain, MerkleTreeTrait, PartitionProof, PoRepConfig,
    SectorUpdateConfig,
};
use filecoin_proofs_api::RegisteredUpdateProof;
use std::marker::PhantomData;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicInputs,
    SetupParams,
};

impl Prover<'_> {
    /// A SnapDeals update proof from the bincode-encoded `PartitionProof`s filecoin-proofs-api's
    /// `generate_partition_proofs` returns (one per partition, in order): 192 bytes per
    /// partition, as `generate_empty_sector_update_proof_with_vanilla` returns them.
    pub fn snap_deals_update(
        &self,
        registered: RegisteredUpdateProof,
        vanilla_proofs: &[Vec<u8>],
        comm_r_old: Commitment,
        comm_r_new: Commitment,
        comm_d_new: Commitment,
    ) -> Result<Proved> {
        let job = update_job_bytes(
            registered,
            Vanilla::Each(vanilla_proofs),
            comm_r_old,
            comm_r_new,
            comm_d_new,
            self.cache().policy().native_witness,
        )?;
        prove_job(self, &*job)
    }

    /// A SnapDeals update proof from filecoin-proofs' partition vanilla proofs; `config` is
    /// the sector's PoRep configuration (only its sector size matters to the update).
    pub fn snap_deals_update_v1<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        &self,
        config: &PoRepConfig,
        vanilla_proofs: Vec<PartitionProof<Tree>>,
        comm_r_old: Commitment,
        comm_r_new: Commitment,
        comm_d_new: Commitment,
    ) -> Result<Proved> {
        let native = self.cache().policy().native_witness;
        let job = update_job(
            config,
            vanilla_proofs,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            native,
        )?;
        prove_job(self, &job)
    }

    /// The partition witnesses a SnapDeals update of `vanilla_proofs` is proved from, on the
    /// cache's PCE: made natively when `native` (an error where that fails: never synthesis
    /// instead), else by synthesizing the circuit; each checked against the verifier's public
    /// inputs. For comparing the two.
    pub fn snap_deals_witnesses_v1<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        &self,
        config: &PoRepConfig,
        vanilla_proofs: Vec<PartitionProof<Tree>>,
        comm_r_old: Commitment,
        comm_r_new: Commitment,
        comm_d_new: Commitment,
        native: bool,
    ) -> Result<Vec<cuzk_synth::Witness>> {
        let job = update_job(
            config,
            vanilla_proofs,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            native,
        )?;
        crate::compound::witnesses_one_way(self, &job, native)
    }
}

/// The SnapDeals job of one sector shape.
pub(crate) type UpdateJob<Tree> = CompoundJob<
    EmptySectorUpdate<Tree>,
    EmptySectorUpdateCircuit<Tree>,
    EmptySectorUpdateCompound<Tree>,
>;

/// The partitions of a SnapDeals request, checked; `config` is the sector's PoRep
/// configuration. `native`: the partitions' witnesses are made natively (cuzk-native).
pub(crate) fn update_job<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &PoRepConfig,
    vanilla_proofs: Vec<PartitionProof<Tree>>,
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    native: bool,
) -> Result<UpdateJob<Tree>> {
    let kind = ProofKind::SnapDeals;
    let span = tracing::info_span!(
        "snap_deals_update",
        sector_size = u64::from(config.sector_size)
    );
    let _enter = span.enter();
    nonzero("comm_r_old", &comm_r_old)?;
    nonzero("comm_r_new", &comm_r_new)?;
    nonzero("comm_d_new", &comm_d_new)?;
    let comm_r_old_safe = tree_r_domain("comm_r_old", &comm_r_old)?;
    let comm_r_new_safe = tree_r_domain("comm_r_new", &comm_r_new)?;
    let comm_d_new_safe =
        DefaultPieceDomain::try_from_bytes(&comm_d_new).map_err(|_| Error::InvalidCommitment {
            name: "comm_d_new",
            hex: hex(&comm_d_new),
            reason: "not a canonical field element",
        })?;

    let update = SectorUpdateConfig::from_porep_config(config);
    let partitions = usize::from(update.update_partitions);
    if vanilla_proofs.len() != partitions {
        return Err(Error::VanillaCount {
            kind,
            what: "partition vanilla proofs".into(),
            expected: partitions,
            found: vanilla_proofs.len(),
        });
    }
    let public_inputs = PublicInputs {
        k: partitions,
        comm_r_old: comm_r_old_safe,
        comm_d_new: comm_d_new_safe,
        comm_r_new: comm_r_new_safe,
        h: update.h,
    };
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(update.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    };
    let pub_params = update_params::<Tree>(&setup)?;
    check_vanilla(&pub_params.vanilla_params, &public_inputs, &vanilla_proofs)?;
    let id = update_id::<Tree>(config, &pub_params.vanilla_params);
    Ok(CompoundJob {
        id,
        verifier_in: public_inputs.clone(),
        pub_in: public_inputs,
        offset: 0,
        vanilla: vanilla_proofs,
        pub_params: pub_params.vanilla_params,
        split: None,
        native: native.then_some(Native {
            make: update_native::<Tree>,
            packs: false,
        }),
        record: None,
        _marker: PhantomData,
    })
}

/// A SnapDeals partition's witness made natively (`cuzk_native::snap_partition_witness`:
/// every value computed directly), into `cs`.
fn update_native<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_in: &PublicInputs,
    pub_params: &storage_proofs_update::PublicParams,
    k: usize,
    proof: &PartitionProof<Tree>,
    cs: &mut cuzk_synth::WitnessCs,
) -> std::result::Result<(), String> {
    cuzk_native::snap_partition_witness::<Tree>(pub_in, pub_params, k, proof, cs)
        .map_err(|e| e.to_string())
}

/// Checks the partitions' vanilla proofs against the request's commitments before anything
/// is synthesized: each commitment the proofs open is compared with the request's, so that a
/// mismatch names the field, then filecoin-proofs' vanilla verification runs on each
/// partition (challenges, Merkle paths, encoding).
fn check_vanilla<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pub_params: &storage_proofs_update::PublicParams,
    public_inputs: &PublicInputs,
    proofs: &[PartitionProof<Tree>],
) -> Result<()> {
    use filecoin_hashers::HashFunction;
    use storage_proofs_core::merkle::MerkleProofTrait;
    let kind = ProofKind::SnapDeals;
    let rejected = |message: String| Error::VanillaRejected { kind, message };
    for (k, proof) in proofs.iter().enumerate() {
        let Some(first) = proof.challenge_proofs.first() else {
            return Err(rejected(format!(
                "partition {k}'s vanilla proof has no challenges"
            )));
        };
        let comm_d = first.proof_d_new.root();
        let comm_r = |root| <TreeRHasher as Hasher>::Function::hash2(&proof.comm_c, &root);
        for (name, opened, given) in [
            (
                "comm_d_new",
                comm_d.into_bytes(),
                public_inputs.comm_d_new.into_bytes(),
            ),
            (
                "comm_r_old",
                comm_r(first.proof_r_old.root()).into_bytes(),
                public_inputs.comm_r_old.into_bytes(),
            ),
            (
                "comm_r_new",
                comm_r(first.proof_r_new.root()).into_bytes(),
                public_inputs.comm_r_new.into_bytes(),
            ),
        ] {
            if opened != given {
                return Err(rejected(format!(
                    "{name} is {}, but partition {k}'s vanilla proof is for {name} {}",
                    hex(given.as_slice()),
                    hex(opened.as_slice())
                )));
            }
        }
        let inputs = PublicInputs {
            k,
            ..public_inputs.clone()
        };
        match EmptySectorUpdate::<Tree>::verify(pub_params, &inputs, proof) {
            Ok(true) => {}
            Ok(false) => {
                return Err(rejected(format!(
                    "partition {k}'s vanilla proof does not verify against the request's \
                     commitments (its challenges or Merkle paths are wrong)"
                )))
            }
            Err(e) => return Err(rejected(format!("partition {k}'s vanilla proof: {e}"))),
        }
    }
    Ok(())
}

/// The SnapDeals job of serialized partition proofs for `registered`'s sector shape.
pub(crate) fn update_job_bytes(
    registered: RegisteredUpdateProof,
    vanilla_proofs: Vanilla<'_>,
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    native: bool,
) -> Result<Box<dyn Job>> {
    fn boxed<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        config: &PoRepConfig,
        vanilla_proofs: Vanilla<'_>,
        comm_r_old: Commitment,
        comm_r_new: Commitment,
        comm_d_new: Commitment,
        native: bool,
    ) -> Result<Box<dyn Job>> {
        let proofs = vanilla_proofs.decode::<PartitionProof<Tree>>(ProofKind::SnapDeals)?;
        Ok(Box::new(update_job(
            config, proofs, comm_r_old, comm_r_new, comm_d_new, native,
        )?))
    }
    let config = registered.as_v1_config();
    crate::with_shape!(
        u64::from(registered.sector_size()),
        boxed,
        &config,
        vanilla_proofs,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        native
    )
}

type UpdateParams<Tree> = compound_proof::PublicParams<'static, EmptySectorUpdate<Tree>>;

fn update_params<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    setup: &compound_proof::SetupParams<'static, EmptySectorUpdate<Tree>>,
) -> Result<UpdateParams<Tree>> {
    EmptySectorUpdateCompound::<Tree>::setup(setup)
        .map_err(|e| crate::porep::setup_error(ProofKind::SnapDeals, e))
}

/// The id of the SnapDeals circuit of `config` (the sector's PoRep configuration) with public
/// parameters `vp`.
fn update_id<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &PoRepConfig,
    vp: &<EmptySectorUpdate<Tree> as ProofScheme<'static>>::PublicParams,
) -> CircuitId {
    CircuitId {
        kind: ProofKind::SnapDeals,
        cache_id: <EmptySectorUpdateCompound<Tree> as CacheableParameters<
            EmptySectorUpdateCircuit<Tree>,
            _,
        >>::cache_identifier(vp),
        sector_size: u64::from(config.sector_size),
    }
}

/// The SnapDeals circuit of `config` (the sector's PoRep configuration), for loading ahead of
/// any request.
pub(crate) fn update_preload<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    config: &PoRepConfig,
) -> Result<crate::compound::Preload> {
    let update = SectorUpdateConfig::from_porep_config(config);
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(update.sector_size),
        },
        partitions: Some(usize::from(update.update_partitions)),
        priority: false,
    };
    let pub_params = update_params::<Tree>(&setup)?;
    let id = update_id::<Tree>(config, &pub_params.vanilla_params);
    let vp = pub_params.vanilla_params;
    Ok(crate::compound::preload(id, move || {
        EmptySectorUpdateCompound::<Tree>::blank_circuit(&vp)
    }))
}

fn tree_r_domain(
    name: &'static str,
    bytes: &Commitment,
) -> Result<<TreeRHasher as Hasher>::Domain> {
    <TreeRHasher as Hasher>::Domain::try_from_bytes(bytes).map_err(|_| Error::InvalidCommitment {
        name,
        hex: hex(bytes),
        reason: "not a canonical field element",
    })
}
