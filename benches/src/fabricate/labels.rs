//! The columns of the opened nodes: every challenged node's labels computed from its parents'
//! columns, layer by layer and lower nodes first (so that a challenged parent's label is there
//! before it is used), and random labels for the nodes that are only parents.

use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_hashers::Domain;
use rand::RngCore;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{StackedBucketGraph, TOTAL_PARENTS};

use super::error::Error;

/// A label or a column's row.
pub(crate) type Label = PoseidonDomain;

/// The label of `node` at `layer` (from 1) from its 37 repeated parent labels, as
/// filecoin-proofs' labeling proofs hash it: SHA-256 of the replica id, the layer (u32, big
/// endian) and the node (u64, big endian) in a zero-padded 64-byte block, then the parents;
/// the digest's top two bits cleared.
pub(crate) fn label(replica_id: &Label, layer: usize, node: u64, parents: &[Label]) -> Label {
    debug_assert_eq!(parents.len(), TOTAL_PARENTS);
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    block[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    block[36..44].copy_from_slice(&node.to_be_bytes());
    let mut hasher = Sha256::new();
    hasher.update(block);
    for parent in parents {
        hasher.update(AsRef::<[u8]>::as_ref(parent));
    }
    let mut digest: [u8; 32] = hasher.finalize().into();
    digest[31] &= 0b0011_1111;
    Label::try_from_bytes(&digest).expect("32 bytes")
}

/// The 37 parent labels of a node's label at `layer`: at layer 1 its DRG parents' labels at
/// layer 1; above, its DRG parents' at this layer then its expander parents' at the layer
/// below; repeated in that order until there are 37. `drg` and `exp` are the parents'
/// columns (rows by layer, from layer 1), in graph order.
pub(crate) fn parent_labels(layer: usize, drg: &[&[Label]], exp: &[&[Label]]) -> Vec<Label> {
    let mut once: Vec<Label> = drg.iter().map(|rows| rows[layer - 1]).collect();
    if layer > 1 {
        once.extend(exp.iter().map(|rows| rows[layer - 2]));
    }
    once.iter().copied().cycle().take(TOTAL_PARENTS).collect()
}

/// The opened nodes of a sector: the challenged ones, their parents, and one column each.
#[derive(Debug)]
pub(crate) struct Openings {
    /// Every opened node's column: its labels at layers 1 to L.
    pub columns: BTreeMap<u32, Vec<Label>>,
    /// Each challenged node's parents, in graph order (DRG parents, then expander parents).
    pub parents: BTreeMap<u32, Vec<u32>>,
    /// How many of the parents are DRG parents.
    pub drg_degree: usize,
}

impl Openings {
    /// The columns of `node`'s DRG and expander parents.
    pub(crate) fn parent_columns(&self, node: u32) -> (Vec<&[Label]>, Vec<&[Label]>) {
        let parents = &self.parents[&node];
        let column = |p: &u32| self.columns[p].as_slice();
        let drg = parents[..self.drg_degree].iter().map(column).collect();
        let exp = parents[self.drg_degree..].iter().map(column).collect();
        (drg, exp)
    }
}

/// Opens the `challenged` nodes of a sector of `layers` layers on `graph` (parents from the
/// graph, per node, no cache) and computes their labels; a node that is only a parent gets
/// random labels (nothing recomputes them).
pub(crate) fn open(
    graph: &StackedBucketGraph<filecoin_hashers::poseidon::PoseidonHasher>,
    replica_id: &Label,
    layers: usize,
    challenged: &BTreeSet<u32>,
    rng: &mut impl RngCore,
) -> Result<Openings, Error> {
    let drg_degree = graph.base_graph().degree();
    let parents: BTreeMap<u32, Vec<u32>> = challenged
        .par_iter()
        .map(|&c| {
            let mut p = vec![0u32; graph.degree()];
            graph
                .parents(c as usize, &mut p)
                .map_err(|e| Error::filecoin("graph parents", e))?;
            Ok((c, p))
        })
        .collect::<Result<_, Error>>()?;
    let mut columns: BTreeMap<u32, Vec<Label>> = BTreeMap::new();
    let opened: BTreeSet<u32> = parents.values().flatten().copied().collect();
    for &node in opened.union(challenged) {
        let rows = if challenged.contains(&node) {
            vec![Label::default(); layers]
        } else {
            (0..layers).map(|_| Label::random(rng)).collect()
        };
        columns.insert(node, rows);
    }
    let mut openings = Openings {
        columns,
        parents,
        drg_degree,
    };
    for layer in 1..=layers {
        for &c in challenged {
            let repeated = {
                let (drg, exp) = openings.parent_columns(c);
                parent_labels(layer, &drg, &exp)
            };
            let value = label(replica_id, layer, u64::from(c), &repeated);
            openings.columns.get_mut(&c).expect("opened")[layer - 1] = value;
        }
    }
    Ok(openings)
}
