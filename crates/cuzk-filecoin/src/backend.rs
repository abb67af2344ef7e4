//! The hook through which [`crate::Prover`]'s partitions are proved: the CPU reference here.
//! GPU proving goes through the scheduler ([`crate::kinds`]) and its CUDA backend instead.

use crate::error::BackendError;
use cuzk_field::Scalar;
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_synth::{Pce, Witness};
use std::sync::Arc;

/// Proves the witnesses of one circuit (the partitions of one request) with the given
/// randomness, one `(r, s)` pair per witness, returning the proofs in the same order.
///
/// The caller has already checked that every witness has the circuit's shape and the
/// verifier's public inputs, and verifies every returned proof before it leaves, so a backend
/// only has to be fast and deterministic in `(r, s)`.
pub trait PartitionProver: Send + Sync + std::fmt::Debug {
    /// Proves `witnesses[i]` with `randomness[i]` for every `i`.
    fn prove(
        &self,
        params: &Arc<PreparedParameters>,
        pce: &Pce,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<Proof>, BackendError>;
}

/// cuzk's CPU reference prover (`cuzk_groth16::prove_batch`): the witnesses one after
/// another, each with all cores.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuProver;

impl PartitionProver for CpuProver {
    fn prove(
        &self,
        params: &Arc<PreparedParameters>,
        pce: &Pce,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<Proof>, BackendError> {
        Ok(cuzk_groth16::prove_batch(
            params, pce, witnesses, randomness,
        )?)
    }
}
