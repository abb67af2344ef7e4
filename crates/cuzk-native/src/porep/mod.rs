//! The witness of one PoRep partition (storage-proofs-porep 19.1's `StackedCircuit`), hybrid:
//! nearly all of it computed natively, a few allocations by the circuit's own gadgets.
//!
//! [`porep_partition_witness`] appends exactly the inputs and aux values that
//! `StackedCircuit::synthesize` appends to a witness-only system (`cuzk_synth::WitnessCs`),
//! in the same order, from the inputs `StackedCompound::circuit` builds that circuit from.
//! It replays the circuit step by step (`docs/native-witness.md` writes the sequence down):
//!
//! - natively: the replica id's and the label parents' bit decompositions, the challenge's
//!   `UInt64`, every label (`create_label_circuit`: 20 SHA-256 compressions each), the
//!   comm_d inclusion path (a binary SHA-256 tree: per level the children's bits and two
//!   compressions), the column hashes and the comm_c and comm_r_last paths (neptune's
//!   Poseidon circuit and storage-proofs' `insert`, in their allocation order), comm_r =
//!   Poseidon(comm_c, comm_r_last) and the encoding;
//! - generically, through the circuit's public gadgets: the allocated numbers that are
//!   inputs and the parents' columns (`ColumnProof::alloc`, one value a row).

pub(crate) mod bits;
pub(crate) mod comm_d;
mod labeling;
pub(crate) mod por;
#[cfg(test)]
mod por_tests;
pub(crate) mod poseidon;

use crate::{Bit, PorepError, Sink};
use bellperson::gadgets::num::AllocatedNum;
use bellperson::ConstraintSystem;
use bits::{num_to_bits_le, reverse_bit_numbering};
use cuzk_field::Scalar;
use cuzk_synth::{PackedAux, Witness, WitnessCs};
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::Hasher;
use rayon::prelude::*;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked::{Proof, PublicInputs, StackedCircuit};
use typenum::{U11, U2};

/// The public inputs of a PoRep partition whose tree is `Tree` (comm_d's tree is SHA-256's).
pub type PorepPublicInputs<Tree> = PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    <Sha256Hasher as Hasher>::Domain,
>;

/// The vanilla proof type of a path in the tree `Tree` (comm_c's and comm_r_last's).
type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A challenge's vanilla proof (filecoin-proofs' `VanillaSealProof`).
pub type PorepProof<Tree> = Proof<Tree, Sha256Hasher>;

/// Appends to `w` the witness of the partition `StackedCompound::circuit(pub_in, (), proofs,
/// ..)` builds: exactly what `StackedCircuit::synthesize` into `cs` appends, inputs and aux,
/// in order. For a whole circuit's witness `cs` starts as `WitnessCs::with_one()` (input 0
/// the constant ONE), or as `WitnessCs::reusing` an earlier witness's memory.
///
/// Filecoin's PoRep only: comm_d's tree is SHA-256's (`DefaultPieceHasher`), the columns are
/// 2 or 11 layers and the Poseidon trees' arities 2, 4 or 8. The aux assignment comes back
/// packed ([`Witness::packed`]; about 99% of it is bits): `cs` should be made by
/// [`WitnessCs::reusing_for_packing`] (or `with_one`), whose aux vector this leaves empty.
/// The challenges run in parallel on rayon's pool (the caller's pool when called inside
/// one), each into its own packed section, joined in order at the end.
pub fn porep_partition_witness<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PorepPublicInputs<Tree>,
    proofs: &[PorepProof<Tree>],
    cs: &mut WitnessCs,
) -> Result<(), PorepError> {
    let first = proofs.first().ok_or(PorepError::NoProofs)?;
    let (comm_r_last, comm_c) = (first.comm_r_last(), first.comm_c());
    if proofs.iter().any(|p| p.comm_r_last() != comm_r_last) {
        return Err(PorepError::Inconsistent("comm_r_last"));
    }
    if proofs.iter().any(|p| p.comm_c() != comm_c) {
        return Err(PorepError::Inconsistent("comm_c"));
    }
    let tau = pub_in.tau.as_ref().ok_or(PorepError::NoTau)?;

    // `StackedCircuit::synthesize`, before the challenges.
    let replica_id: Scalar = pub_in.replica_id.into();
    let replica_id_num = AllocatedNum::alloc(&mut *cs, || Ok(replica_id))?;
    replica_id_num.inputize(&mut *cs)?;
    let replica_id_bits =
        reverse_bit_numbering(num_to_bits_le(replica_id, &mut cs.witness_mut().aux));
    let comm_d_num = AllocatedNum::alloc(&mut *cs, || Ok(tau.comm_d.into()))?;
    comm_d_num.inputize(&mut *cs)?;
    let comm_r_num = AllocatedNum::alloc(&mut *cs, || Ok(tau.comm_r.into()))?;
    comm_r_num.inputize(&mut *cs)?;
    let (comm_r_last, comm_c): (Scalar, Scalar) = (comm_r_last.into(), comm_c.into());
    let aux = &mut cs.witness_mut().aux;
    aux.extend_from_slice(&[comm_r_last, comm_c]);
    comm_r_hash(comm_c, comm_r_last, aux);

    // The circuit's per-challenge proof (storage-proofs-porep's `circuit::params::Proof`) is a
    // public type its crate does not export by name; it carries the data leaf and the
    // challenge as the circuit takes them and allocates the parents' columns (the vanilla
    // proofs keep those crate-private). `StackedCircuit::synthesize`'s parameter types it.
    let circuit_proofs = typed_like(
        |cs: &mut WitnessCs, p| {
            StackedCircuit::<Tree, Sha256Hasher>::synthesize(cs, None, None, None, None, None, p)
        },
        proofs.iter().cloned().map(Into::into).collect(),
    );
    // What only the circuit's own gadgets allocate, per challenge: the parents' columns
    // (`ColumnProof::alloc`, one value a row). The rest is written natively below.
    let challenges: Vec<Challenge> = circuit_proofs
        .into_par_iter()
        .map(|proof| {
            // The per-challenge proof's types have no public names: they stay in this closure.
            let data_leaf = proof.data_leaf.ok_or(PorepError::Missing("data leaf"))?;
            let challenge = proof.challenge.ok_or(PorepError::Missing("challenge"))?;
            let mut drg = Vec::with_capacity(proof.drg_parents_proofs.len());
            for parent in proof.drg_parents_proofs {
                let mut column = WitnessCs::new();
                let _ = parent.alloc(&mut column)?;
                drg.push(column.into_witness());
            }
            let mut exp = Vec::with_capacity(proof.exp_parents_proofs.len());
            for parent in proof.exp_parents_proofs {
                let mut column = WitnessCs::new();
                let _ = parent.alloc(&mut column)?;
                exp.push(column.into_witness());
            }
            Ok(Challenge {
                data_leaf,
                challenge,
                drg,
                exp,
            })
        })
        .collect::<Result<_, PorepError>>()?;

    // `Proof::synthesize`, one challenge after another. A challenge's values depend only on
    // its own proofs and the replica id's bits: every challenge writes its own packed
    // section, in parallel, and the sections are joined in order after the values above.
    let sections: Vec<(PackedAux, Vec<Scalar>)> = challenges
        .par_iter()
        .zip(proofs.par_iter())
        .map(|(c, vanilla)| {
            let (mut aux, mut inputs) = (PackedAux::new(), Vec::new());
            write_challenge::<Tree>(c, vanilla, &replica_id_bits, &mut aux, &mut inputs)?;
            Ok((aux, inputs))
        })
        .collect::<Result<_, PorepError>>()?;
    let mut packed = cs.take_packed();
    let w = cs.witness_mut();
    let (len, others) = sections
        .iter()
        .fold((w.aux.len(), w.aux.len()), |(l, o), s| {
            (l + s.0.len(), o + s.0.values().len())
        });
    packed.reserve(len, others);
    for &v in &w.aux {
        packed.push(v);
    }
    w.aux = Vec::new();
    for (aux, inputs) in &sections {
        packed.append(aux);
        w.inputs.extend_from_slice(inputs);
    }
    w.packed = Some(Box::new(packed));
    Ok(())
}

/// A challenge's columns as the circuit allocated them, and its data leaf and index.
struct Challenge {
    data_leaf: Scalar,
    challenge: u64,
    /// The DRG parents' columns: each one's rows as aux (and any inputs it allocated).
    drg: Vec<Witness>,
    /// The expander parents' columns.
    exp: Vec<Witness>,
}

/// Appends one challenge's values (`Proof::synthesize`) to `aux` and its inputs to `inputs`:
/// the data leaf and its comm_d path, each parent's column, hash and comm_c path, the
/// labels, the encoding and the comm_r_last and comm_c paths.
fn write_challenge<Tree: 'static + MerkleTreeTrait>(
    c: &Challenge,
    vanilla: &PorepProof<Tree>,
    replica_id_bits: &[Bit],
    aux: &mut impl Sink,
    inputs: &mut Vec<Scalar>,
) -> Result<(), PorepError> {
    aux.push(c.data_leaf);
    let comm_d_path = vanilla.comm_d_proofs.as_options();
    comm_d::comm_d_inclusion(c.data_leaf, &comm_d_path, aux, inputs)?;

    // The parents' columns: allocated (by the circuit), hashed and opened in comm_c.
    let columns = serde_json::to_value(&vanilla.replica_column_proofs)?;
    let mut layers = None;
    let drg = parents::<Tree>(&c.drg, &columns["drg_parents"], &mut layers, aux, inputs)?;
    let exp = parents::<Tree>(&c.exp, &columns["exp_parents"], &mut layers, aux, inputs)?;
    let layers = layers.ok_or(PorepError::Parents { count: 0 })?;

    // Labeling, the encoding (`constraint::add`: one value) and the two remaining openings.
    let node = labeling::challenge_num(c.challenge, aux, inputs);
    let labels = labeling::labels(replica_id_bits, &drg, &exp, &node, layers, aux)?;
    let key = *labels.last().ok_or(PorepError::ColumnHash { layers })?;
    let encoded = key + c.data_leaf;
    aux.push(encoded);
    let comm_r_last_path = vanilla.comm_r_last_proof.as_options();
    por::inclusion::<TreeProof<Tree>>(encoded, &comm_r_last_path, aux, inputs)?;
    let column_hash = column_hash(&labels, aux)?;
    let path = column_path::<Tree>(&columns["c_x"])?;
    por::inclusion::<TreeProof<Tree>>(column_hash, &path, aux, inputs)?;
    Ok(())
}

/// Appends each parent's column (as the circuit allocated it), its hash and its comm_c path
/// (`proofs[i]`, the vanilla column proofs' serde form); returns the columns' rows.
fn parents<Tree: 'static + MerkleTreeTrait>(
    columns: &[Witness],
    proofs: &serde_json::Value,
    layers: &mut Option<usize>,
    aux: &mut impl Sink,
    inputs: &mut Vec<Scalar>,
) -> Result<Vec<Vec<Scalar>>, PorepError> {
    let mut rows = Vec::with_capacity(columns.len());
    for (i, column) in columns.iter().enumerate() {
        aux.extend(column.aux.iter().copied());
        inputs.extend_from_slice(&column.inputs);
        check_rows(&column.aux, layers)?;
        let hash = column_hash(&column.aux, aux)?;
        let path = column_path::<Tree>(&proofs[i])?;
        por::inclusion::<TreeProof<Tree>>(hash, &path, aux, inputs)?;
        rows.push(column.aux.clone());
    }
    Ok(rows)
}

/// `v`, typed as the parameter `f` takes: `f` is never called.
fn typed_like<P, R>(_f: impl FnOnce(&mut WitnessCs, Vec<P>) -> R, v: Vec<P>) -> Vec<P> {
    v
}

/// Checks a column's rows: the first column fixes the layers, which every other must have
/// (the circuit asserts it).
fn check_rows(rows: &[Scalar], layers: &mut Option<usize>) -> Result<(), PorepError> {
    let first = *layers.get_or_insert(rows.len());
    if rows.len() != first {
        return Err(PorepError::Columns {
            layers: first,
            rows: rows.len(),
        });
    }
    if first != 2 && first != 11 {
        return Err(PorepError::ColumnHash { layers: first });
    }
    Ok(())
}

/// A vanilla column proof's inclusion path (`as_options`), read from its serde form: the
/// proof's fields are crate-private and this is the public way to them.
fn column_path<Tree: MerkleTreeTrait>(
    column_proof: &serde_json::Value,
) -> Result<Vec<comm_d::Level>, PorepError> {
    let proof: TreeProof<Tree> = serde_json::from_value(column_proof["inclusion_proof"].clone())?;
    Ok(proof.as_options())
}

/// What the tree hasher's `hash2_circuit(comm_c, comm_r_last)` allocates
/// (Filecoin's trees hash with Poseidon: arity 2, filecoin-hashers' constants), appended to
/// `aux`; returns comm_r.
pub(crate) fn comm_r_hash(comm_c: Scalar, comm_r_last: Scalar, aux: &mut impl Sink) -> Scalar {
    poseidon::poseidon::<U2>(&[comm_c, comm_r_last], aux)
}

/// storage-proofs-porep's `hash_single_column` (crate-private there): Poseidon of arity 2 or
/// 11 with filecoin-hashers' constants.
fn column_hash(column: &[Scalar], aux: &mut impl Sink) -> Result<Scalar, PorepError> {
    Ok(match column.len() {
        2 => poseidon::poseidon::<U2>(column, aux),
        11 => poseidon::poseidon::<U11>(column, aux),
        layers => return Err(PorepError::ColumnHash { layers }),
    })
}
