//! The witness of one PoSt partition (storage-proofs-post 19.1's `FallbackPoStCircuit`, which
//! WinningPoSt and WindowPoSt share), natively.
//!
//! [`post_partition_witness`] appends exactly what `FallbackPoStCircuit::synthesize` appends
//! to a witness-only system, from what `FallbackPoStCompound::circuit` builds it from. Per
//! sector (a partition short of sectors repeats its last public sector, as the compound
//! does): comm_r_last, comm_c and comm_r allocated, comm_r made an input, comm_r's Poseidon
//! hash of comm_c and comm_r_last; then per challenge the leaf and its inclusion path in the
//! comm_r_last tree (`PoRCircuit`, the root private), its index bits packed into inputs.

use crate::porep::{comm_r_hash, por};
use crate::PorepError;
use cuzk_field::Scalar;
use cuzk_synth::WitnessCs;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_post::fallback::{Proof, PublicInputs, PublicParams};

/// The public inputs of a PoSt over sectors whose tree is `Tree`.
pub type PostPublicInputs<Tree> =
    PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain>;

/// A PoSt partition's vanilla proof over sectors whose tree is `Tree`.
pub type PostProof<Tree> = Proof<<Tree as MerkleTreeTrait>::Proof>;

/// Why a PoSt partition's native witness could not be made: inputs
/// `FallbackPoStCompound::circuit` would refuse, or a path the circuit could not take.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    /// The vanilla proof has one sector proof per circuit slot.
    #[error("{found} sector proofs where the circuit has {expected} sectors")]
    SectorCount {
        /// The circuit's sectors (`PublicParams::sector_count`).
        expected: usize,
        /// The vanilla proof's.
        found: usize,
    },
    /// The public inputs have sectors for the partition.
    #[error("no public sectors for partition {partition}")]
    NoSectors {
        /// The partition.
        partition: usize,
    },
    /// An inclusion path the circuit could not take.
    #[error("sector {sector}'s challenge {challenge}: {source}")]
    Path {
        /// The sector's slot in the partition.
        sector: usize,
        /// The challenge.
        challenge: usize,
        /// What was wrong.
        source: PorepError,
    },
}

/// Appends to `cs` the witness of partition `k` that `FallbackPoStCompound::circuit(pub_in,
/// .., proof, pub_params, Some(k))` builds: exactly what `FallbackPoStCircuit::synthesize`
/// into `cuzk_synth::WitnessCs` appends, inputs and aux, in order (`cs` a whole circuit's
/// system, input 0 ONE). Runs on the calling thread.
pub fn post_partition_witness<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PostPublicInputs<Tree>,
    pub_params: &PublicParams,
    k: usize,
    proof: &PostProof<Tree>,
    cs: &mut WitnessCs,
) -> Result<(), PostError> {
    if proof.sectors.len() != pub_params.sector_count {
        return Err(PostError::SectorCount {
            expected: pub_params.sector_count,
            found: proof.sectors.len(),
        });
    }
    let public = pub_in
        .sectors
        .chunks(pub_params.sector_count.max(1))
        .nth(k)
        .ok_or(PostError::NoSectors { partition: k })?;
    let w = cs.witness_mut();
    for (i, sector) in proof.sectors.iter().enumerate() {
        let comm_r: Scalar = public[i.min(public.len() - 1)].comm_r.into();
        let comm_r_last: Scalar = sector.comm_r_last.into();
        let comm_c: Scalar = sector.comm_c.into();
        w.aux.extend([comm_r_last, comm_c, comm_r]);
        w.inputs.push(comm_r);
        comm_r_hash(comm_c, comm_r_last, &mut w.aux);
        for (j, p) in sector.inclusion_proofs.iter().enumerate() {
            let leaf: Scalar = p.leaf().into();
            w.aux.push(leaf);
            por::inclusion::<Tree::Proof>(leaf, &p.as_options(), &mut w.aux, &mut w.inputs)
                .map_err(|source| PostError::Path {
                    sector: i,
                    challenge: j,
                    source,
                })?;
        }
    }
    Ok(())
}
