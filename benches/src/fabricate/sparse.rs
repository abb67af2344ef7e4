//! A sparse Merkle tree: only the nodes on the opened paths and their siblings exist. Every
//! sibling that is not itself on an opened path is a random field element, drawn once and
//! kept, so that every path of every partition hashes to the one root.

use filecoin_hashers::{Domain, Hasher};
use merkletree::hash::Algorithm;
use rand::RngCore;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// The node hash of `H`'s trees over `children` at `height`, as filecoin-proofs' inclusion
/// paths compute it (a fresh hasher per node: the SHA-256 one keeps state between calls).
pub(crate) fn node<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    let mut function = H::Function::default();
    function.multi_node(children, height)
}

/// The stored nodes of a tree with levels of the given arities, leaves first.
#[derive(Debug)]
pub(crate) struct SparseTree<H: Hasher> {
    arities: Vec<usize>,
    /// `levels[h]`: the stored nodes of level h by index (level 0: the leaves).
    levels: Vec<BTreeMap<usize, H::Domain>>,
    root: H::Domain,
}

impl<H: Hasher> SparseTree<H> {
    /// Builds the tree over the opened `leaves`, level by level: each group of children that
    /// holds an opened node is completed with random canonical elements (drawn in index order,
    /// so the same rng gives the same tree) and hashed into its parent.
    pub(crate) fn build(
        leaves: BTreeMap<usize, H::Domain>,
        arities: &[usize],
        rng: &mut impl RngCore,
    ) -> SparseTree<H> {
        assert!(!leaves.is_empty(), "a sparse tree needs an opened leaf");
        let mut levels = vec![leaves];
        for (height, &arity) in arities.iter().enumerate() {
            let level = levels.last_mut().expect("the leaves are the first level");
            let parents: Vec<usize> = {
                let mut p: Vec<usize> = level.keys().map(|i| i / arity).collect();
                p.dedup();
                p
            };
            for &p in &parents {
                for i in p * arity..(p + 1) * arity {
                    level.entry(i).or_insert_with(|| H::Domain::random(rng));
                }
            }
            let level = &*level;
            let next: BTreeMap<usize, H::Domain> = parents
                .par_iter()
                .map(|&p| {
                    let children: Vec<H::Domain> =
                        (p * arity..(p + 1) * arity).map(|i| level[&i]).collect();
                    (p, node::<H>(&children, height))
                })
                .collect();
            levels.push(next);
        }
        let top = levels.last().expect("at least the leaves");
        assert_eq!(top.len(), 1, "the arities do not reach a single root");
        let root = *top.values().next().expect("one root");
        SparseTree {
            arities: arities.to_vec(),
            levels,
            root,
        }
    }

    pub(crate) fn root(&self) -> H::Domain {
        self.root
    }

    /// The path of leaf `index` in filecoin-proofs' `from_parts` form: per level, the other
    /// children of the group in order and the node's position in it.
    pub(crate) fn path(&self, index: usize) -> Vec<(Vec<H::Domain>, usize)> {
        let mut at = index;
        let mut path = Vec::with_capacity(self.arities.len());
        for (height, &arity) in self.arities.iter().enumerate() {
            let (group, position) = (at / arity, at % arity);
            let siblings = (0..arity)
                .filter(|&i| i != position)
                .map(|i| self.levels[height][&(group * arity + i)])
                .collect();
            path.push((siblings, position));
            at = group;
        }
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Recomputes a root from a leaf and its path, as an inclusion path does.
    fn root_of<H: Hasher>(leaf: H::Domain, path: &[(Vec<H::Domain>, usize)]) -> H::Domain {
        path.iter()
            .enumerate()
            .fold(leaf, |h, (height, (siblings, position))| {
                let mut nodes = siblings.clone();
                nodes.insert(*position, h);
                node::<H>(&nodes, height)
            })
    }

    #[test]
    fn every_path_reaches_the_one_root() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let arities = [8, 8, 2];
        let leaves: BTreeMap<usize, _> = [0usize, 1, 9, 64, 127]
            .iter()
            .map(|&i| (i, <PoseidonHasher as Hasher>::Domain::random(&mut rng)))
            .collect();
        let tree = SparseTree::<PoseidonHasher>::build(leaves.clone(), &arities, &mut rng);
        for (&i, &leaf) in &leaves {
            let path = tree.path(i);
            assert_eq!(path.len(), 3);
            assert_eq!(
                root_of::<PoseidonHasher>(leaf, &path),
                tree.root(),
                "leaf {i}"
            );
        }
        // The same rng gives the same tree.
        let mut again = ChaCha8Rng::seed_from_u64(7);
        let _: Vec<_> = (0..5)
            .map(|_| <PoseidonHasher as Hasher>::Domain::random(&mut again))
            .collect();
        let twin = SparseTree::<PoseidonHasher>::build(leaves, &arities, &mut again);
        assert_eq!(twin.root(), tree.root());
    }
}
