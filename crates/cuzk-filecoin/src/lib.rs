//! Filecoin proofs through cuzk: PoRep C2, SnapDeals, WindowPoSt and WinningPoSt.
//!
//! filecoin-proofs 19.1 (CPU only) supplies the circuits, the public inputs and the
//! verifiers; cuzk records each circuit once into a PCE, synthesizes witnesses on it and
//! proves them. Filecoin domain code only, no GPU code: on a GPU the proofs go through the
//! scheduler ([`kinds`]) and its CUDA backend (cuzk-gpu), the daemon's path; [`Prover`]
//! here proves on the CPU reference, or on any [`PartitionProver`]. The output is byte for
//! byte in filecoin-proofs' layout, so its verifiers (`verify_seal`,
//! `verify_winning_post`, `verify_window_post`, `verify_empty_sector_update_proof`) accept it.
//!
//! - [`Prover`] holds a [`ParamCache`] and a backend; its methods mirror filecoin-proofs'
//!   entry points: [`Prover::seal_commit_phase2`] (C1 JSON as Lotus/Curio send it),
//!   [`Prover::winning_post`], [`Prover::window_post_partition`], [`Prover::window_post`],
//!   [`Prover::snap_deals_update`] (vanilla proofs as bytes), and `*_v1` variants taking
//!   filecoin-proofs' own types and configurations.
//! - The free functions [`seal_commit_phase2`], [`winning_post`], [`window_post_partition`]
//!   and [`snap_deals_update`] do the same on the CPU and return the bytes alone.
//! - [`ParamCache`] reads an existing Filecoin parameter folder (`v28-*.params`, digests
//!   checked against parameters.json), generates missing parameters of small test sectors
//!   with cuzk's generator in the files filecoin-proofs reads, and keeps each circuit's PCE
//!   beside its parameters.
//! - [`ids`] turns what Lotus/Curio send (numeric proof types, miner ids, commitment CIDs)
//!   into these calls' arguments.
//! - [`kinds`] serves the four proofs as cuzk-sched circuit kinds (`porep-seal-commit`,
//!   `snap-deals-update`, `window-post-partition`, `winning-post`), as the daemon registers
//!   them: setups loaded from a [`ParamCache`], requests read from Curio's fields.
//!
//! Every proof is verified against the verifier's own public inputs before it is returned.
#![forbid(unsafe_code)]

mod adapter;
mod backend;
mod cache;
mod compound;
mod error;
pub mod ids;
pub mod kinds;
mod ni;
mod porep;
mod post;
mod progress;
mod update;

pub use backend::{CpuProver, PartitionProver};
pub use cache::{
    file_digest, CachePolicy, CircuitId, CircuitKeys, DigestCheck, Generator, ParamCache,
};
pub use compound::{Proved, Timings};
pub use error::{BackendError, Error, ProofKind, Result};
pub use kinds::FilecoinKind;
pub use porep::decode_c1;

pub use filecoin_proofs::{ChallengeSeed, Commitment, ProverId};
pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// Calls `$f::<Shape>($args…)` for the sector shape of `$size` bytes (the sizes
/// filecoin-proofs-api registers), or returns [`Error::UnsupportedSectorSize`].
macro_rules! with_shape {
    ($size:expr, $f:ident, $($args:expr),* $(,)?) => {{
        use filecoin_proofs::constants::*;
        match $size {
            s if s == SECTOR_SIZE_2_KIB => $f::<SectorShape2KiB>($($args),*),
            s if s == SECTOR_SIZE_8_MIB => $f::<SectorShape8MiB>($($args),*),
            s if s == SECTOR_SIZE_512_MIB => $f::<SectorShape512MiB>($($args),*),
            s if s == SECTOR_SIZE_32_GIB => $f::<SectorShape32GiB>($($args),*),
            s if s == SECTOR_SIZE_64_GIB => $f::<SectorShape64GiB>($($args),*),
            sector_size => Err($crate::Error::UnsupportedSectorSize { sector_size }),
        }
    }};
}
pub(crate) use with_shape;

/// Proves Filecoin proofs with the parameters of one cache on one backend.
#[derive(Clone, Copy, Debug)]
pub struct Prover<'a> {
    cache: &'a ParamCache,
    backend: &'a dyn PartitionProver,
}

impl<'a> Prover<'a> {
    /// A prover on cuzk's CPU backend.
    pub fn cpu(cache: &'a ParamCache) -> Self {
        Prover {
            cache,
            backend: &CpuProver,
        }
    }

    /// A prover on the given backend.
    pub fn new(cache: &'a ParamCache, backend: &'a dyn PartitionProver) -> Self {
        Prover { cache, backend }
    }

    /// The parameter cache.
    pub fn cache(&self) -> &'a ParamCache {
        self.cache
    }

    /// The backend.
    pub fn backend(&self) -> &'a dyn PartitionProver {
        self.backend
    }
}

/// PoRep C2 on the CPU: see [`Prover::seal_commit_phase2`].
pub fn seal_commit_phase2(
    c1_json: &[u8],
    prover_id: ProverId,
    sector_id: u64,
    cache: &ParamCache,
) -> Result<Vec<u8>> {
    Prover::cpu(cache)
        .seal_commit_phase2(c1_json, prover_id, sector_id)
        .map(|p| p.proof)
}

/// WinningPoSt on the CPU: see [`Prover::winning_post`].
pub fn winning_post(
    registered: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    cache: &ParamCache,
) -> Result<Vec<u8>> {
    Prover::cpu(cache)
        .winning_post(registered, randomness, prover_id, vanilla_proofs)
        .map(|p| p.proof)
}

/// One WindowPoSt partition on the CPU: see [`Prover::window_post_partition`].
pub fn window_post_partition(
    registered: RegisteredPoStProof,
    randomness: &ChallengeSeed,
    prover_id: ProverId,
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    cache: &ParamCache,
) -> Result<Vec<u8>> {
    Prover::cpu(cache)
        .window_post_partition(
            registered,
            randomness,
            prover_id,
            vanilla_proofs,
            partition_index,
        )
        .map(|p| p.proof)
}

/// A SnapDeals update proof on the CPU: see [`Prover::snap_deals_update`].
pub fn snap_deals_update(
    registered: RegisteredUpdateProof,
    vanilla_proofs: &[Vec<u8>],
    comm_r_old: Commitment,
    comm_r_new: Commitment,
    comm_d_new: Commitment,
    cache: &ParamCache,
) -> Result<Vec<u8>> {
    Prover::cpu(cache)
        .snap_deals_update(
            registered,
            vanilla_proofs,
            comm_r_old,
            comm_r_new,
            comm_d_new,
        )
        .map(|p| p.proof)
}
