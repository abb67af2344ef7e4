//! The witness of one SnapDeals partition (storage-proofs-update 19.1's
//! `EmptySectorUpdateCircuit`), natively.
//!
//! [`snap_partition_witness`] appends exactly what `EmptySectorUpdateCircuit::synthesize`
//! appends to a witness-only system, from what `EmptySectorUpdateCompound::circuit` builds the
//! circuit from, in this order:
//!
//! 1. `k_and_h_select` allocated and made an input, its low bits (the partition's, then
//!    h_select's) allocated, the partition bits packed;
//! 2. comm_r_old, comm_d_new and comm_r_new allocated and made inputs; phi, the randomness
//!    Poseidon of comm_d_new and comm_r_old;
//! 3. comm_c, the two roots of TreeR, the apex leafs and the partition path's siblings
//!    allocated; comm_r_old's and comm_r_new's Poseidon (comm_c with each root);
//! 4. the apex tree (SHA-256 of each pair of nodes, row by row), then the partition path from
//!    its root to comm_d_new (`por_no_challenge_input` over TreeD: per level `insert`'s two
//!    picks and a SHA-256);
//! 5. the challenges' bits: per digest its index, the randomness Poseidon of comm_r_new and
//!    the index, and its 255 bits;
//! 6. per challenge: the high bits packed for each `h` and selected by h_select, rho, the old
//!    replica leaf and the new data leaf, the encoding (a product and a sum), the old and the
//!    new replica paths (their siblings, then per level `insert` and a Poseidon: no bits are
//!    allocated, the challenge's are used), the apex leaf selected (`select`'s picks) and the
//!    data path up to it (siblings, then per level two picks and a SHA-256).
//!
//! The inputs are ONE (the caller's), `k_and_h_select`, comm_r_old, comm_d_new, comm_r_new.

use crate::porep::bits::{num_to_bits_le, pack_le, scalar};
use crate::porep::comm_d::sha256_hash2;
use crate::porep::comm_r_hash;
use crate::porep::por::insert;
use crate::porep::poseidon::{poseidon, poseidon_with};
use crate::NativeError;
use cuzk_field::Scalar;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::PoseidonArity;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_update::constants::{hs, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::{PartitionProof, PublicInputs, PublicParams};
use typenum::Unsigned;

/// A SnapDeals partition's vanilla proof over a sector whose TreeR is `Tree`.
pub type SnapProof<Tree> = PartitionProof<Tree>;

/// Why a SnapDeals partition's native witness could not be made: inputs the circuit (or
/// `EmptySectorUpdateCompound::circuit`) would panic on.
#[derive(Debug, thiserror::Error)]
pub enum SnapError {
    /// The partition index is one of the sector's partitions.
    #[error("partition {partition} of a sector with {count} partitions")]
    Partition {
        /// The index asked for.
        partition: usize,
        /// The sector's partitions.
        count: usize,
    },
    /// `h` is one of the values the circuit selects among.
    #[error("h = {h} is not one of this sector size's {allowed:?}")]
    H {
        /// The public inputs' `h`.
        h: usize,
        /// The sector size's values.
        allowed: Vec<usize>,
    },
    /// The proof has the circuit's count of something.
    #[error("{found} {what} where the circuit has {expected}")]
    Count {
        /// What was counted.
        what: &'static str,
        /// The circuit's.
        expected: usize,
        /// The proof's.
        found: usize,
    },
    /// A challenge's Merkle path has another shape than the circuit's.
    #[error("challenge {challenge}'s {path} path is not of the circuit's shape")]
    Path {
        /// The challenge's index in the partition.
        challenge: usize,
        /// Which path (`r_old`, `d_new`, `r_new`).
        path: &'static str,
    },
    /// Every challenge's data path ends with the same partition path.
    #[error("challenge {challenge}'s data path ends in another partition path than the first's")]
    PartitionPath {
        /// The challenge.
        challenge: usize,
    },
    /// The new replica leaf is the old one encoded with the new data (the circuit asserts it).
    #[error("challenge {challenge}'s new replica leaf is not its encoding")]
    Encoding {
        /// The challenge.
        challenge: usize,
    },
    /// `insert` is hand-written for arities 2, 4 and 8, the ones Filecoin's trees have.
    #[error("a tree of arity {arity}: only 2, 4 and 8 are replayed")]
    Arity {
        /// The arity.
        arity: usize,
    },
    /// The native SHA-256 refused its input.
    #[error(transparent)]
    Native(#[from] NativeError),
}

/// Appends to `cs` the witness of partition `k` that `EmptySectorUpdateCompound::circuit(pub_in,
/// (), proof, pub_params, Some(k))` builds: exactly what `EmptySectorUpdateCircuit::synthesize`
/// into `cuzk_synth::WitnessCs` appends, inputs and aux, in order (`cs` a whole circuit's
/// system, input 0 ONE). Runs on the calling thread.
pub fn snap_partition_witness<Tree: 'static + MerkleTreeTrait<Hasher = PoseidonHasher>>(
    pub_in: &PublicInputs,
    pub_params: &PublicParams,
    k: usize,
    proof: &SnapProof<Tree>,
    cs: &mut cuzk_synth::WitnessCs,
) -> Result<(), SnapError> {
    let p = Shape::of(pub_params);
    if k >= p.partitions {
        return Err(SnapError::Partition {
            partition: k,
            count: p.partitions,
        });
    }
    let hs = hs(pub_params.sector_nodes);
    let h_index = hs
        .iter()
        .position(|&h| h == pub_in.h)
        .ok_or_else(|| SnapError::H {
            h: pub_in.h,
            allowed: hs.to_vec(),
        })?;
    count(
        "challenge proofs",
        p.challenges,
        proof.challenge_proofs.len(),
    )?;
    count("apex leafs", p.apex_leafs, proof.apex_leafs.len())?;
    // The partition path: the top `partition_bits` levels of every challenge's data path.
    let data_paths = proof
        .challenge_proofs
        .iter()
        .enumerate()
        .map(|(c, cp)| binary_siblings(&cp.proof_d_new.path(), p.challenge_bits, c))
        .collect::<Result<Vec<_>, _>>()?;
    let partition_path = &data_paths[0][p.challenge_bits - p.partition_bits..];
    if let Some(c) = data_paths
        .iter()
        .position(|d| &d[p.challenge_bits - p.partition_bits..] != partition_path)
    {
        return Err(SnapError::PartitionPath { challenge: c });
    }

    let w = cs.witness_mut();
    let aux = &mut w.aux;
    // 1. k and h_select in one input, its bits, the partition packed.
    let k_and_h_select = k as u64 | (1u64 << h_index) << p.partition_bits;
    let k_and_h_select_num = Scalar::from(k_and_h_select);
    aux.push(k_and_h_select_num);
    w.inputs.push(k_and_h_select_num);
    let kh_bits: Vec<bool> = (0..p.partition_bits + hs.len())
        .map(|i| (k_and_h_select >> i) & 1 == 1)
        .collect();
    aux.extend(kh_bits.iter().map(|&b| scalar(b)));
    let (partition_bits, h_select_bits) = kh_bits.split_at(p.partition_bits);
    let partition = pack_le(partition_bits);
    aux.push(partition);

    // 2. The commitments, phi.
    let comm_r_old: Scalar = pub_in.comm_r_old.into();
    let comm_d_new: Scalar = pub_in.comm_d_new.into();
    let comm_r_new: Scalar = pub_in.comm_r_new.into();
    for c in [comm_r_old, comm_d_new, comm_r_new] {
        aux.push(c);
        w.inputs.push(c);
    }
    let gen = &*POSEIDON_CONSTANTS_GEN_RANDOMNESS;
    let phi = poseidon_with(gen, &[comm_d_new, comm_r_old], aux);

    // 3. The private commitments and comm_r's hashes.
    let first = &proof.challenge_proofs[0];
    let comm_c: Scalar = proof.comm_c.into();
    let root_r_old: Scalar = first.proof_r_old.root().into();
    let root_r_new: Scalar = first.proof_r_new.root().into();
    aux.extend([comm_c, root_r_old, root_r_new]);
    let apex_leafs: Vec<Scalar> = proof.apex_leafs.iter().map(|&l| l.into()).collect();
    aux.extend_from_slice(&apex_leafs);
    aux.extend_from_slice(partition_path);
    comm_r_hash(comm_c, root_r_old, aux);
    comm_r_hash(comm_c, root_r_new, aux);

    // 4. The apex tree and the partition path.
    let mut row = apex_leafs.clone();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| sha256_hash2(pair[0], pair[1], aux))
            .collect::<Result<_, _>>()?;
    }
    binary_path(partition_bits, row[0], partition_path, aux)?;

    // 5. The challenges' bits (storage-proofs-update's `gen_challenge_bits`).
    let bits_per_challenge = p.challenge_bits - p.partition_bits;
    let per_digest = Scalar::CAPACITY as usize / bits_per_challenge;
    let digests = p.challenges.div_ceil(per_digest);
    let mut generated: Vec<Vec<bool>> = Vec::with_capacity(p.challenges);
    for j in 0..digests {
        let digest_index = partition * Scalar::from(digests as u64) + Scalar::from(j as u64);
        aux.push(digest_index);
        let digest = poseidon_with(gen, &[comm_r_new, digest_index], aux);
        let bits: Vec<bool> = num_to_bits_le(digest, aux)
            .iter()
            .map(|b| b.value())
            .collect();
        let take = (p.challenges - generated.len()).min(per_digest);
        generated.extend(
            bits.chunks(bits_per_challenge)
                .take(take)
                .map(<[bool]>::to_vec),
        );
    }

    // 6. Each challenge.
    for (c, (cp, random_bits)) in proof.challenge_proofs.iter().zip(generated).enumerate() {
        let c_bits: Vec<bool> = random_bits
            .into_iter()
            .chain(partition_bits.iter().copied())
            .collect();
        let bit_len = c_bits.len();
        let mut selected = Scalar::from(0u64);
        for (&h, &on) in hs.iter().zip(h_select_bits) {
            let high = &c_bits[bit_len - h..];
            let c_high = pack_le(&high[..high.len().min(Scalar::CAPACITY as usize)]);
            let or_zero = if on { c_high } else { Scalar::from(0u64) };
            aux.extend([c_high, or_zero]);
            selected += or_zero;
        }
        aux.push(selected);
        let rho = poseidon_with(gen, &[phi, selected], aux);

        let leaf_r_old: Scalar = cp.proof_r_old.leaf().into();
        let leaf_d_new: Scalar = cp.proof_d_new.leaf().into();
        aux.extend([leaf_r_old, leaf_d_new]);
        let product = leaf_d_new * rho;
        let leaf_r_new = leaf_r_old + product;
        aux.extend([product, leaf_r_new]);
        let expected: Scalar = cp.proof_r_new.leaf().into();
        if leaf_r_new != expected {
            return Err(SnapError::Encoding { challenge: c });
        }

        for (path, leaf, name) in [
            (cp.proof_r_old.path(), leaf_r_old, "r_old"),
            (cp.proof_r_new.path(), leaf_r_new, "r_new"),
        ] {
            for (siblings, _) in &path {
                aux.extend(siblings.iter().map(|&s| Scalar::from(s)));
            }
            tree_r_path::<Tree>(&c_bits, leaf, &path, aux).map_err(|e| match e {
                PathError::Shape => SnapError::Path {
                    challenge: c,
                    path: name,
                },
                PathError::Arity(arity) => SnapError::Arity { arity },
            })?;
        }

        let apex_bits_start = p.challenge_bits - p.partition_bits - p.apex_leaf_bits;
        let apex_bits = &c_bits[apex_bits_start..apex_bits_start + p.apex_leaf_bits];
        let mut state = apex_leafs.clone();
        for &bit in apex_bits.iter().rev() {
            let half = state.len() / 2;
            state = (0..half)
                .map(|j| {
                    let v = if bit { state[half + j] } else { state[j] };
                    aux.push(v);
                    v
                })
                .collect();
        }
        let to_apex = &data_paths[c][..apex_bits_start];
        aux.extend_from_slice(to_apex);
        binary_path(&c_bits[..apex_bits_start], leaf_d_new, to_apex, aux)?;
    }
    Ok(())
}

/// The circuit's public parameters, named as this module uses them.
struct Shape {
    partitions: usize,
    partition_bits: usize,
    challenges: usize,
    challenge_bits: usize,
    apex_leafs: usize,
    apex_leaf_bits: usize,
}

impl Shape {
    fn of(p: &PublicParams) -> Shape {
        Shape {
            partitions: p.partition_count,
            partition_bits: p.partition_bit_len,
            challenges: p.challenge_count,
            challenge_bits: p.challenge_bit_len,
            apex_leafs: p.apex_leaf_count,
            apex_leaf_bits: p.apex_leaf_bit_len,
        }
    }
}

fn count(what: &'static str, expected: usize, found: usize) -> Result<(), SnapError> {
    if expected == found {
        Ok(())
    } else {
        Err(SnapError::Count {
            what,
            expected,
            found,
        })
    }
}

/// A binary path's siblings, one per level, `levels` of them.
fn binary_siblings<D: Copy + Into<Scalar>>(
    path: &[(Vec<D>, usize)],
    levels: usize,
    challenge: usize,
) -> Result<Vec<Scalar>, SnapError> {
    if path.len() != levels || path.iter().any(|(s, _)| s.len() != 1) {
        return Err(SnapError::Path {
            challenge,
            path: "d_new",
        });
    }
    Ok(path.iter().map(|(s, _)| s[0].into()).collect())
}

/// `por_no_challenge_input` over TreeD (binary, SHA-256) from `leaf`, the siblings already
/// allocated: per level `insert`'s two picks and the hash. Returns the root.
fn binary_path(
    bits: &[bool],
    leaf: Scalar,
    siblings: &[Scalar],
    aux: &mut Vec<Scalar>,
) -> Result<Scalar, NativeError> {
    let mut cur = leaf;
    for (&bit, &sibling) in bits.iter().zip(siblings) {
        let (left, right) = if bit { (sibling, cur) } else { (cur, sibling) };
        aux.extend([left, right]);
        cur = sha256_hash2(left, right, aux)?;
    }
    Ok(cur)
}

/// Why a TreeR path could not be replayed: its shape, or an arity `insert` does not cover.
enum PathError {
    Shape,
    Arity(usize),
}

/// `por_no_challenge_input` over TreeR (Poseidon; base, sub and top arities) from `leaf`, the
/// siblings already allocated, the challenge's bits as the insertion indices.
fn tree_r_path<Tree: MerkleTreeTrait>(
    bits: &[bool],
    leaf: Scalar,
    path: &[(
        Vec<<PoseidonHasher as filecoin_hashers::Hasher>::Domain>,
        usize,
    )],
    aux: &mut Vec<Scalar>,
) -> Result<Scalar, PathError> {
    let (sub, top) = (
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    );
    let extra = usize::from(sub > 0) + usize::from(top > 0);
    let base_len = path.len().checked_sub(extra).ok_or(PathError::Shape)?;
    let mut bits = bits.iter().copied();
    let mut levels = path.iter();
    let mut cur = leaf;
    for _ in 0..base_len {
        cur = level::<Tree::Arity>(cur, levels.next(), &mut bits, aux)?;
    }
    if sub > 0 {
        cur = level::<Tree::SubTreeArity>(cur, levels.next(), &mut bits, aux)?;
    }
    if top > 0 {
        cur = level::<Tree::TopTreeArity>(cur, levels.next(), &mut bits, aux)?;
    }
    if bits.next().is_some() {
        return Err(PathError::Shape);
    }
    Ok(cur)
}

/// One TreeR level of arity `A`: `insert` at the position the next bits give, then Poseidon.
fn level<A: PoseidonArity>(
    cur: Scalar,
    level: Option<&(
        Vec<<PoseidonHasher as filecoin_hashers::Hasher>::Domain>,
        usize,
    )>,
    bits: &mut impl Iterator<Item = bool>,
    aux: &mut Vec<Scalar>,
) -> Result<Scalar, PathError> {
    let arity = A::to_usize();
    let (siblings, _) = level.ok_or(PathError::Shape)?;
    if siblings.len() + 1 != arity {
        return Err(PathError::Shape);
    }
    let index: Vec<bool> = (0..arity.trailing_zeros())
        .map(|_| bits.next().ok_or(PathError::Shape))
        .collect::<Result<_, _>>()?;
    let siblings: Vec<Scalar> = siblings.iter().map(|&s| s.into()).collect();
    let children = insert(cur, &index, &siblings, aux).ok_or(PathError::Arity(arity))?;
    Ok(poseidon::<A>(&children, aux))
}
