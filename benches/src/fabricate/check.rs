//! The self-check of a C1 output: its shape and commitments, every challenged label recomputed
//! from its parents' columns and the comm_d and comm_r_last paths (which filecoin-proofs'
//! vanilla verification does not check, and the circuit does), then filecoin-proofs'
//! `verify_all_partitions`; when that refuses, each column opening is checked alone to name
//! the one that fails.

use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::{
    as_safe_commitment, Commitment, PoRepConfig, ProverId, Ticket, VanillaSealProof,
};
use filecoin_proofs_api::seal::{SealCommitPhase1Output as ApiC1, VanillaSealProof as ApiProofs};
use rayon::prelude::*;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, ColumnProof, StackedDrg};

use super::assemble::{bytes, challenges, replica_id, Shape, TreeProof};
use super::error::{CheckError, Opening, Problem};
use super::labels::{label, parent_labels, Label};
use cuzk_filecoin::ids::hex;

/// The commitments and randomness of a C1 output, beside its vanilla proofs.
#[derive(Clone, Copy, Debug)]
pub struct Public {
    /// comm_r.
    pub comm_r: Commitment,
    /// comm_d.
    pub comm_d: Commitment,
    /// The replica id.
    pub replica_id: PoseidonDomain,
    /// The interactive seed.
    pub seed: Ticket,
    /// The ticket.
    pub ticket: Ticket,
}

impl Public {
    /// Those of filecoin-proofs' C1 output.
    pub fn of<Tree: Shape>(c1: &filecoin_proofs::SealCommitPhase1Output<Tree>) -> Public {
        Public {
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            replica_id: c1.replica_id,
            seed: c1.seed,
            ticket: c1.ticket,
        }
    }
}

/// The feature that makes `config` other than interactive PoRep, if any.
pub(crate) fn not_interactive(config: &PoRepConfig) -> Option<String> {
    [ApiFeature::SyntheticPoRep, ApiFeature::NonInteractivePoRep]
        .into_iter()
        .find(|&f| config.feature_enabled(f))
        .map(|f| format!("{f:?}"))
}

/// Checks filecoin-proofs-api's C1 output of sector `sector` of the prover `prover_id` (see
/// the module docs). Refuses SynthPoRep and NI-PoRep outputs.
pub fn check_api(c1: &ApiC1, prover_id: &ProverId, sector: u64) -> Result<(), CheckError> {
    let config = c1.registered_proof.as_v1_config();
    let public = Public {
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        replica_id: c1.replica_id,
        seed: c1.seed,
        ticket: c1.ticket,
    };
    let size = u64::from(config.sector_size);
    let expected = match &c1.vanilla_proofs {
        ApiProofs::StackedDrg2KiBV1(p) => (filecoin_proofs::SECTOR_SIZE_2_KIB, p.len()),
        ApiProofs::StackedDrg8MiBV1(p) => (filecoin_proofs::SECTOR_SIZE_8_MIB, p.len()),
        ApiProofs::StackedDrg512MiBV1(p) => (filecoin_proofs::SECTOR_SIZE_512_MIB, p.len()),
        ApiProofs::StackedDrg32GiBV1(p) => (filecoin_proofs::SECTOR_SIZE_32_GIB, p.len()),
        ApiProofs::StackedDrg64GiBV1(p) => (filecoin_proofs::SECTOR_SIZE_64_GIB, p.len()),
    };
    if expected.0 != size {
        return Err(CheckError::filecoin(
            "C1 output",
            format!(
                "{:?} is a sector of {size} bytes, its vanilla proofs are of {} bytes",
                c1.registered_proof, expected.0
            ),
        ));
    }
    match &c1.vanilla_proofs {
        ApiProofs::StackedDrg2KiBV1(p)
        | ApiProofs::StackedDrg8MiBV1(p)
        | ApiProofs::StackedDrg512MiBV1(p) => check_parts(&config, p, &public, prover_id, sector),
        ApiProofs::StackedDrg32GiBV1(p) => check_parts(&config, p, &public, prover_id, sector),
        ApiProofs::StackedDrg64GiBV1(p) => check_parts(&config, p, &public, prover_id, sector),
    }
}

/// Checks filecoin-proofs' own C1 output of shape `Tree` under `config`.
pub fn check<Tree: Shape>(
    config: &PoRepConfig,
    c1: &filecoin_proofs::SealCommitPhase1Output<Tree>,
    prover_id: &ProverId,
    sector: u64,
) -> Result<(), CheckError> {
    check_parts(
        config,
        &c1.vanilla_proofs,
        &Public::of(c1),
        prover_id,
        sector,
    )
}

/// One challenge's proof with where it sits.
struct At<'a, Tree: Shape> {
    partition: usize,
    index: usize,
    node: usize,
    proof: &'a VanillaSealProof<Tree>,
}

impl<Tree: Shape> At<'_, Tree> {
    fn opening(&self, opening: Opening, problem: Problem) -> CheckError {
        CheckError::Opening {
            partition: self.partition,
            index: self.index,
            node: self.node,
            opening,
            problem,
        }
    }
}

/// The checks of [`check`] on the parts of a C1 output.
pub fn check_parts<Tree: Shape>(
    config: &PoRepConfig,
    proofs: &[Vec<VanillaSealProof<Tree>>],
    public: &Public,
    prover_id: &ProverId,
    sector: u64,
) -> Result<(), CheckError> {
    if let Some(feature) = not_interactive(config) {
        return Err(CheckError::NotInteractive { feature });
    }
    let pp = filecoin_proofs::parameters::public_params::<Tree>(config)
        .map_err(|e| CheckError::filecoin("public parameters", e))?;
    let comm_r: PoseidonDomain = as_safe_commitment(&public.comm_r, "comm_r")
        .map_err(|e| CheckError::filecoin("comm_r", e))?;
    let comm_d: Sha256Domain = as_safe_commitment(&public.comm_d, "comm_d")
        .map_err(|e| CheckError::filecoin("comm_d", e))?;
    let expected_id = replica_id(config, prover_id, sector, &public.ticket, &public.comm_d);
    if expected_id != public.replica_id {
        return Err(CheckError::ReplicaId {
            found: hex(&bytes(&public.replica_id)),
            expected: hex(&bytes(&expected_id)),
            prover_id: hex(prover_id),
            sector,
        });
    }
    let partitions = usize::from(config.partitions);
    if proofs.len() != partitions {
        return Err(CheckError::Partitions {
            expected: partitions,
            found: proofs.len(),
        });
    }
    let derived = challenges(&pp, public.replica_id, public.seed, partitions);
    let mut all = Vec::new();
    for (partition, (ps, cs)) in proofs.iter().zip(&derived).enumerate() {
        if ps.len() != cs.len() {
            return Err(CheckError::Challenges {
                partition,
                expected: cs.len(),
                found: ps.len(),
            });
        }
        all.extend(
            ps.iter()
                .zip(cs)
                .enumerate()
                .map(|(index, (proof, &node))| At {
                    partition,
                    index,
                    node,
                    proof,
                }),
        );
    }
    let first = &proofs[0][0];
    let (comm_c, comm_r_last) = (first.comm_c(), first.comm_r_last());
    let hashed = <PoseidonHasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);
    if hashed != comm_r {
        return Err(CheckError::CommR {
            found: hex(&public.comm_r),
            expected: hex(&bytes(&hashed)),
        });
    }
    let layers = pp.num_layers;
    let degrees = (
        pp.graph.base_graph().degree(),
        pp.graph.degree() - pp.graph.base_graph().degree(),
    );
    // filecoin-proofs' vanilla verification checks the comm_d and comm_r_last openings' node
    // and root but not their paths (the circuit does): they are checked here.
    // The openings of the data and replica leaves first: they say which node a proof is of.
    first_error(all.par_iter().map(|at| {
        merkle(
            at,
            Opening::CommD,
            &at.proof.comm_d_proofs,
            at.node,
            None,
            comm_d,
        )?;
        let r_last = &at.proof.comm_r_last_proof;
        merkle(at, Opening::CommRLast, r_last, at.node, None, comm_r_last)?;
        labels(at, &public.replica_id, layers, degrees)
    }))?;

    let inputs = stacked::PublicInputs::<PoseidonDomain, Sha256Domain> {
        replica_id: public.replica_id,
        seed: Some(public.seed),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
    };
    let verified = StackedDrg::<Tree, Sha256Hasher>::verify_all_partitions(&pp, &inputs, proofs)
        .map_err(|e| CheckError::filecoin("verify_all_partitions", e))?;
    if verified {
        return Ok(());
    }
    first_error(all.par_iter().map(|at| columns(at, &pp.graph, comm_c)))?;
    first_error(all.par_iter().map(|at| {
        if at.proof.verify(&pp, &inputs, at.node, &pp.graph) {
            Ok(())
        } else {
            Err(CheckError::Vanilla {
                partition: at.partition,
                index: at.index,
                node: at.node,
            })
        }
    }))?;
    Err(CheckError::VanillaRefused)
}

/// The first error in challenge order (the checks run in parallel).
fn first_error(
    results: impl IndexedParallelIterator<Item = Result<(), CheckError>>,
) -> Result<(), CheckError> {
    let results: Vec<Result<(), CheckError>> = results.collect();
    results.into_iter().collect()
}

/// The challenged node's labels recomputed from its parents' columns, and its replica leaf
/// from its last label and its data leaf.
fn labels<Tree: Shape>(
    at: &At<'_, Tree>,
    replica_id: &Label,
    layers: usize,
    (drg_degree, exp_degree): (usize, usize),
) -> Result<(), CheckError> {
    let columns = &at.proof.replica_column_proofs;
    let found = (columns.drg_parents.len(), columns.exp_parents.len());
    if found != (drg_degree, exp_degree) {
        return Err(CheckError::Parents {
            partition: at.partition,
            index: at.index,
            node: at.node,
            found,
            expected: (drg_degree, exp_degree),
        });
    }
    // filecoin-proofs' accessor panics on a column shorter than the sector's layers, as its
    // verifier does; every other inconsistency is an error here.
    let rows = |c: &ColumnProof<TreeProof<Tree>>| -> Result<Vec<Label>, CheckError> {
        (1..=layers)
            .map(|l| c.get_node_at_layer(l).copied())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CheckError::filecoin("column rows", e))
    };
    let own = rows(&columns.c_x)?;
    let drg: Vec<Vec<Label>> = columns
        .drg_parents
        .iter()
        .map(rows)
        .collect::<Result<_, _>>()?;
    let exp: Vec<Vec<Label>> = columns
        .exp_parents
        .iter()
        .map(rows)
        .collect::<Result<_, _>>()?;
    let drg: Vec<&[Label]> = drg.iter().map(Vec::as_slice).collect();
    let exp: Vec<&[Label]> = exp.iter().map(Vec::as_slice).collect();
    for layer in 1..=layers {
        let recomputed = label(
            replica_id,
            layer,
            at.node as u64,
            &parent_labels(layer, &drg, &exp),
        );
        if recomputed != own[layer - 1] {
            return Err(CheckError::Label {
                partition: at.partition,
                index: at.index,
                node: at.node,
                layer,
            });
        }
    }
    let data: Fr = at.proof.comm_d_proofs.leaf().into();
    let key: Fr = own[layers - 1].into();
    let replica: PoseidonDomain = (key + data).into();
    if replica != at.proof.comm_r_last_proof.leaf() {
        return Err(CheckError::Encoding {
            partition: at.partition,
            index: at.index,
            node: at.node,
        });
    }
    Ok(())
}

/// Each column opening of a challenge alone: index, leaf, path and root.
fn columns<Tree: Shape>(
    at: &At<'_, Tree>,
    graph: &stacked::StackedBucketGraph<PoseidonHasher>,
    comm_c: PoseidonDomain,
) -> Result<(), CheckError> {
    let mut parents = vec![0u32; graph.degree()];
    graph
        .parents(at.node, &mut parents)
        .map_err(|e| CheckError::filecoin("graph parents", e))?;
    let columns = &at.proof.replica_column_proofs;
    let d = columns.drg_parents.len();
    let all = std::iter::once((Opening::Column, &columns.c_x, at.node))
        .chain(
            columns
                .drg_parents
                .iter()
                .enumerate()
                .map(|(i, c)| (Opening::DrgParent(i), c, parents[i] as usize)),
        )
        .chain(
            columns
                .exp_parents
                .iter()
                .enumerate()
                .map(|(i, c)| (Opening::ExpParent(i), c, parents[d + i] as usize)),
        );
    for (opening, column, node) in all {
        if column.verify(node as u32, &comm_c) {
            continue;
        }
        // The inclusion proof is crate-private in storage-proofs-porep; its serialized form
        // is not.
        let value = serde_json::to_value(column).map_err(|e| CheckError::filecoin("column", e))?;
        let inclusion: TreeProof<Tree> = serde_json::from_value(value["inclusion_proof"].clone())
            .map_err(|e| CheckError::filecoin("column", e))?;
        // Names the problem; the column's own check covers nothing more than these.
        merkle(
            at,
            opening,
            &inclusion,
            node,
            Some(column.column_hash().into()),
            comm_c,
        )?;
    }
    Ok(())
}

/// One Merkle opening of `node`: its index, leaf (when known), path and root.
fn merkle<Tree: Shape, P: MerkleProofTrait>(
    at: &At<'_, Tree>,
    opening: Opening,
    proof: &P,
    node: usize,
    leaf: Option<<P::Hasher as Hasher>::Domain>,
    root: <P::Hasher as Hasher>::Domain,
) -> Result<(), CheckError> {
    let problem = if proof.path_index() != node {
        Problem::Index {
            found: proof.path_index(),
        }
    } else if leaf.is_some_and(|l| l != proof.leaf()) {
        Problem::Leaf
    } else if !proof.verify() {
        Problem::Path
    } else if proof.root() != root {
        Problem::Root
    } else {
        return Ok(());
    };
    Err(at.opening(opening, problem))
}
