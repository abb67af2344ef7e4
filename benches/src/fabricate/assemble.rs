//! The generator for one sector shape: commitments, openings and filecoin-proofs' vanilla
//! proofs, in challenge order, parents in graph order.

use blstrs::Scalar as Fr;
use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::{
    Commitment, MerkleTreeTrait, PoRepConfig, ProverId, SealCommitPhase1Output, Ticket,
    VanillaSealProof,
};
use rand::RngCore;
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_porep::stacked::{
    self, Column, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof,
};
use typenum::{Unsigned, U2};

use super::error::Error;
use super::labels::{self, parent_labels, Label, Openings};
use super::sparse::{node, SparseTree};

/// A tree of a sector's shape over Poseidon, as all of filecoin-proofs' sector shapes are.
pub trait Shape: 'static + MerkleTreeTrait<Hasher = PoseidonHasher> {}
impl<T: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>> Shape for T {}

/// The openings' Merkle proof type of shape `Tree` (comm_c and comm_r_last).
pub(crate) type TreeProof<Tree> = MerkleProof<
    PoseidonHasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// The arity of each level of a `Tree` over `nodes` leaves, leaves first: the base tree's
/// levels, then the sub-tree level and the top level when the shape has them.
pub(crate) fn arities<Tree: MerkleTreeTrait>(nodes: usize) -> Vec<usize> {
    let (base, sub, top) = (
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let mut leaves = nodes / sub.max(1) / top.max(1);
    let mut levels = Vec::new();
    while leaves > 1 {
        assert_eq!(leaves % base, 0, "{nodes} nodes do not fill the shape");
        leaves /= base;
        levels.push(base);
    }
    levels.extend([sub, top].into_iter().filter(|&a| a > 0));
    levels
}

/// The data tree of an all-zero sector: `ladder[h]` is the root of a zero subtree of 2^h
/// leaves, so every comm_d path's siblings are `ladder[0..]` and comm_d is the last one.
pub(crate) fn zero_ladder(nodes: usize) -> Vec<Sha256Domain> {
    let height = nodes.trailing_zeros() as usize;
    assert_eq!(1 << height, nodes, "a sector has a power of two nodes");
    let mut ladder = vec![Sha256Domain::default()];
    for h in 0..height {
        let z = ladder[h];
        ladder.push(node::<Sha256Hasher>(&[z, z], h));
    }
    ladder
}

/// A domain element as a commitment's 32 bytes.
pub(crate) fn bytes(d: &impl Domain) -> Commitment {
    let mut out = [0u8; 32];
    d.write_bytes(&mut out).expect("32 bytes");
    out
}

/// The challenges of every partition, as filecoin-proofs derives them from the replica id
/// and the seed.
pub(crate) fn challenges<Tree: Shape>(
    pp: &stacked::PublicParams<Tree>,
    replica_id: PoseidonDomain,
    seed: Ticket,
    partitions: usize,
) -> Vec<Vec<usize>> {
    let inputs = stacked::PublicInputs::<PoseidonDomain, Sha256Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    (0..partitions)
        .map(|k| inputs.challenges(&pp.challenges, pp.graph.size(), Some(k)))
        .collect()
}

/// The replica id filecoin-proofs derives from these.
pub(crate) fn replica_id(
    config: &PoRepConfig,
    prover_id: &ProverId,
    sector: u64,
    ticket: &Ticket,
    comm_d: &Commitment,
) -> PoseidonDomain {
    stacked::generate_replica_id::<PoseidonHasher, _>(
        prover_id,
        sector,
        ticket,
        comm_d,
        &config.porep_id,
    )
}

/// The opened nodes, their trees and the commitments, from which the proofs are cut.
struct Sector<'a, Tree: Shape> {
    openings: &'a Openings,
    ladder: &'a [Sha256Domain],
    tree_c: SparseTree<PoseidonHasher>,
    tree_r: SparseTree<PoseidonHasher>,
    leaves_c: BTreeMap<usize, PoseidonDomain>,
    layers: usize,
    _tree: std::marker::PhantomData<Tree>,
}

impl<Tree: Shape> Sector<'_, Tree> {
    fn column_proof(&self, node: u32) -> ColumnProof<TreeProof<Tree>> {
        let n = node as usize;
        let path = self.tree_c.path(n);
        let inclusion = TreeProof::<Tree>::from_parts(self.leaves_c[&n], self.tree_c.root(), path);
        ColumnProof::new(node, self.openings.columns[&node].clone(), inclusion)
    }

    /// The vanilla proof of challenge `c`, as filecoin-proofs' prover lays it out.
    fn proof(&self, c: usize) -> VanillaSealProof<Tree> {
        let node = c as u32;
        let comm_d_path = (0..self.ladder.len() - 1)
            .map(|h| (vec![self.ladder[h]], (c >> h) & 1))
            .collect();
        let comm_d_proofs = MerkleProof::<Sha256Hasher, U2>::from_parts(
            Sha256Domain::default(),
            *self.ladder.last().expect("a root"),
            comm_d_path,
        );
        let last = self.openings.columns[&node][self.layers - 1];
        let comm_r_last_proof =
            TreeProof::<Tree>::from_parts(encode(last), self.tree_r.root(), self.tree_r.path(c));
        let parents = &self.openings.parents[&node];
        let d = self.openings.drg_degree;
        let replica_column_proofs = ReplicaColumnProof {
            c_x: self.column_proof(node),
            drg_parents: parents[..d].iter().map(|&p| self.column_proof(p)).collect(),
            exp_parents: parents[d..].iter().map(|&p| self.column_proof(p)).collect(),
        };
        let (drg, exp) = self.openings.parent_columns(node);
        let labeling_proofs: Vec<LabelingProof<PoseidonHasher>> = (1..=self.layers)
            .map(|layer| {
                LabelingProof::new(layer as u32, c as u64, parent_labels(layer, &drg, &exp))
            })
            .collect();
        let encoding_proof = EncodingProof::new(
            self.layers as u32,
            c as u64,
            parent_labels(self.layers, &drg, &exp),
        );
        stacked::Proof {
            comm_d_proofs,
            comm_r_last_proof,
            replica_column_proofs,
            labeling_proofs,
            encoding_proof,
        }
    }
}

/// The replica of a zero data node under `key`: key + 0 in the field, as filecoin-proofs
/// encodes.
pub(crate) fn encode(key: Label) -> Label {
    let key: Fr = key.into();
    (key + Fr::from(0u64)).into()
}

/// Fabricates the C1 output of a committed-capacity sector of shape `Tree` under `config`.
pub(crate) fn generate<Tree: Shape>(
    config: &PoRepConfig,
    prover_id: &ProverId,
    sector: u64,
    ticket: Ticket,
    seed: Ticket,
    rng: &mut impl RngCore,
) -> Result<SealCommitPhase1Output<Tree>, Error> {
    let pp = filecoin_proofs::parameters::public_params::<Tree>(config)
        .map_err(|e| Error::filecoin("public parameters", e))?;
    let nodes = pp.graph.size();
    let ladder = zero_ladder(nodes);
    let comm_d = bytes(ladder.last().expect("a root"));
    let replica_id = replica_id(config, prover_id, sector, &ticket, &comm_d);
    let partitions = usize::from(config.partitions);
    let challenges = challenges(&pp, replica_id, seed, partitions);
    let challenged: BTreeSet<u32> = challenges.iter().flatten().map(|&c| c as u32).collect();
    let openings = labels::open(&pp.graph, &replica_id, pp.num_layers, &challenged, rng)?;

    let leaves_c: BTreeMap<usize, PoseidonDomain> = openings
        .columns
        .par_iter()
        .map(|(&n, rows)| {
            let column = Column::<PoseidonHasher>::new(n, rows.clone())
                .map_err(|e| Error::filecoin("column", e))?;
            Ok((n as usize, column.hash().into()))
        })
        .collect::<Result<_, Error>>()?;
    let leaves_r: BTreeMap<usize, PoseidonDomain> = challenged
        .iter()
        .map(|&c| (c as usize, encode(openings.columns[&c][pp.num_layers - 1])))
        .collect();
    let levels = arities::<Tree>(nodes);
    let tree_c = SparseTree::build(leaves_c.clone(), &levels, rng);
    let tree_r = SparseTree::build(leaves_r, &levels, rng);
    let comm_r = <PoseidonHasher as Hasher>::Function::hash2(&tree_c.root(), &tree_r.root());
    let sector_openings = Sector::<Tree> {
        openings: &openings,
        ladder: &ladder,
        tree_c,
        tree_r,
        leaves_c,
        layers: pp.num_layers,
        _tree: std::marker::PhantomData,
    };
    let vanilla_proofs = challenges
        .iter()
        .map(|cs| cs.par_iter().map(|&c| sector_openings.proof(c)).collect())
        .collect();
    Ok(SealCommitPhase1Output {
        vanilla_proofs,
        comm_r: bytes(&comm_r),
        comm_d,
        replica_id,
        seed,
        ticket,
    })
}
