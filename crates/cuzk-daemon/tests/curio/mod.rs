//! Requests built exactly as Curio builds them at commit e0294b0f: one function per Go
//! function that calls cuzk, filling the same fields with the same values (request ids,
//! priorities, registered-proof numbers, envelopes, raw commitments). A field the Go code
//! leaves unset stays proto3's default here too.
//!
//! - `lib/ffi/cuzk_funcs.go`: `PoRepSnarkCuzk`, `ProveUpdateCuzk`, `WindowPoStCuzk`,
//!   `WinningPoStCuzk`;
//! - `tasks/proofshare/task_prove.go`: `computePoRep`, `computeSnap`.
//!
//! Included by the Filecoin tests (`#[path]`), beside the sector support module.

use crate::support::curio_envelope;
use cuzk_daemon::proto::{Priority, ProofKind, SubmitProofRequest};

/// Go's `fmt.Sprintf("%d", b)` of a byte slice: `[1 2 3]`.
pub fn go_bytes_d(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// Go's `fmt.Sprintf("%x", b)` of a byte slice: lowercase hex.
pub fn go_bytes_x(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `PoRepSnarkCuzk`: the wrapped C1 output, `porep-<miner>-<sector>`.
pub fn porep_snark(
    c1_json: &[u8],
    miner: u64,
    sector: u64,
    seal_proof: u64,
    sector_size: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("porep-{miner}-{sector}"),
        proof_kind: ProofKind::PorepSealCommit.into(),
        sector_size,
        registered_proof: seal_proof,
        priority: Priority::Normal.into(),
        // wrapC1Output's envelope, Phase1Out base64 as encoding/json writes a []byte.
        vanilla_proof: curio_envelope(sector, c1_json, sector_size),
        sector_number: sector,
        miner_id: miner,
        ..SubmitProofRequest::default()
    }
}

/// proofshare's `computePoRep`: as `PoRepSnarkCuzk`, with the task id in the request id.
pub fn proofshare_porep(
    c1_json: &[u8],
    miner: u64,
    sector: u64,
    task: u64,
    seal_proof: u64,
    sector_size: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("ps-porep-{miner}-{sector}-{task}"),
        ..porep_snark(c1_json, miner, sector, seal_proof, sector_size)
    }
}

/// The commitments of a SnapDeals request, raw 32 bytes each (`commcid.CIDTo…CommitmentV1`).
#[derive(Clone, Copy, Debug)]
pub struct SnapCommitments {
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
}

/// `ProveUpdateCuzk`: the partition proofs in `vanilla_proofs`, raw commitments.
pub fn prove_update(
    vanilla_proofs: Vec<Vec<u8>>,
    update_proof: u64,
    miner: u64,
    sector: u64,
    sector_size: u64,
    c: SnapCommitments,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("snap-{miner}-{sector}"),
        proof_kind: ProofKind::SnapDealsUpdate.into(),
        sector_size,
        registered_proof: update_proof,
        priority: Priority::Normal.into(),
        vanilla_proofs,
        sector_number: sector,
        miner_id: miner,
        comm_r_old: c.comm_r_old.to_vec(),
        comm_r_new: c.comm_r_new.to_vec(),
        comm_d_new: c.comm_d_new.to_vec(),
        ..SubmitProofRequest::default()
    }
}

/// proofshare's `computeSnap`: no sector size, the task id in the request id.
pub fn proofshare_snap(
    vanilla_proofs: Vec<Vec<u8>>,
    update_proof: u64,
    miner: u64,
    sector: u64,
    task: u64,
    c: SnapCommitments,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("ps-snap-{miner}-{sector}-{task}"),
        sector_size: 0,
        ..prove_update(vanilla_proofs, update_proof, miner, sector, 0, c)
    }
}

/// `WindowPoStCuzk`: one partition's sectors' vanilla proofs; the request id formats the
/// randomness' first 8 bytes with `%d` (`wdpost-1000-0-[1 2 3 4 5 6 7 8]`).
pub fn window_post(
    vanilla_proofs: Vec<Vec<u8>>,
    post_proof: u64,
    miner: u64,
    randomness: &[u8; 32],
    partition: u32,
    sector_size: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!(
            "wdpost-{miner}-{partition}-{}",
            go_bytes_d(&randomness[..8])
        ),
        proof_kind: ProofKind::WindowPostPartition.into(),
        sector_size,
        registered_proof: post_proof,
        priority: Priority::High.into(),
        vanilla_proofs,
        miner_id: miner,
        randomness: randomness.to_vec(),
        partition_index: partition,
        ..SubmitProofRequest::default()
    }
}

/// `WinningPoStCuzk`: the challenged sectors' vanilla proofs, CRITICAL.
pub fn winning_post(
    vanilla_proofs: Vec<Vec<u8>>,
    post_proof: u64,
    miner: u64,
    randomness: &[u8; 32],
    sector_size: u64,
) -> SubmitProofRequest {
    SubmitProofRequest {
        request_id: format!("winpost-{miner}-{}", go_bytes_x(&randomness[..8])),
        proof_kind: ProofKind::WinningPost.into(),
        sector_size,
        registered_proof: post_proof,
        priority: Priority::Critical.into(),
        vanilla_proofs,
        miner_id: miner,
        randomness: randomness.to_vec(),
        ..SubmitProofRequest::default()
    }
}
