//! NI-PoRep C2 through the daemon: a 2KiB sector sealed with filecoin-proofs-api as
//! `StackedDrg2KiBV1_2_Feat_NonInteractivePoRep` (registered proof 15), its C1 output in Curio's
//! envelope through a spawned daemon's `SubmitProof`, the 13 partition proofs aggregated with
//! SnarkPack into the seal proof that filecoin-proofs-api's `verify_seal` accepts.
//!
//! The daemon generates what is missing in the tests' parameter folder (2KiB parameters and a
//! test SnarkPack SRS, `v28-fil-inner-product-v1.srs`); `verify_seal` reads the same folder.
#![cfg(feature = "filecoin")]

mod common;
#[path = "../../cuzk-filecoin/tests/support/mod.rs"]
mod support;

use anyhow::Result;
use common::{assert_completed, prove, Launch, TestDaemon};
use cuzk_daemon::proto::{ProofKind, SubmitProofRequest};
use cuzk_filecoin::ids::prover_id_from_miner_id;
use filecoin_proofs::SECTOR_SIZE_2_KIB;
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use std::time::Instant;
use storage_proofs_core::sector::SectorId;
use support::{curio_envelope, layout, ni_c1_json};
use tonic::Code;

/// The miner the sector belongs to; the daemon derives the prover id from it.
const MINER: u64 = 1000;
/// `StackedDrg2KiBV1_2_Feat_NonInteractivePoRep` as Curio and the chain number it.
const NI_2KIB: u64 = 15;
/// filecoin-proofs' NI-PoRep partitions for 2KiB to 1GiB sectors.
const NI_PARTITIONS: u32 = 13;

/// A daemon over the tests' parameter folder that generates 2KiB parameters (and the test
/// SRS) when missing, on `backend`.
fn daemon(backend: &str) -> TestDaemon {
    let config = format!(
        "[prover]\nbackend = {backend:?}\n[filecoin]\nparam_dir = {:?}\ngenerate_up_to = \"2KiB\"\n",
        layout().params.display().to_string()
    );
    Launch::new(&config).start()
}

fn request(vanilla_proof: Vec<u8>, sector: u64, registered_proof: u64) -> SubmitProofRequest {
    SubmitProofRequest {
        proof_kind: ProofKind::PorepSealCommit.into(),
        vanilla_proof,
        sector_size: SECTOR_SIZE_2_KIB,
        registered_proof,
        sector_number: sector,
        miner_id: MINER,
        ..SubmitProofRequest::default()
    }
}

fn verify_seal(c1: &SealCommitPhase1Output, sector: u64, proof: &[u8]) -> Result<bool> {
    filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        prover_id_from_miner_id(MINER),
        SectorId::from(sector),
        c1.ticket,
        c1.seed,
        proof,
    )
}

/// Seals, proves through a daemon on `backend`, and checks the aggregate with `verify_seal`.
async fn ni_porep_through_the_daemon(backend: &str, sector: u64) -> Result<()> {
    let prover_id = prover_id_from_miner_id(MINER);
    let (c1, json) = tokio::task::spawn_blocking(move || ni_c1_json(prover_id, sector)).await??;
    assert_eq!(
        c1.registered_proof,
        cuzk_filecoin::ids::registered_seal_proof(NI_2KIB)?
    );
    let envelope = curio_envelope(sector, &json, SECTOR_SIZE_2_KIB);
    let daemon = daemon(backend);
    let mut client = daemon.client().await;

    // An interactive registered proof for an NI C1 output is refused at once.
    let status = client
        .submit_proof(request(envelope.clone(), sector, 5))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("NonInteractivePoRep"),
        "{status:?}"
    );

    let start = Instant::now();
    let response = prove(&mut client, request(envelope, sector, NI_2KIB)).await;
    assert_completed(&response);
    eprintln!(
        "NI-PoRep C2 ({backend}): {:.1} s through the daemon (synthesis {} ms, prove {} ms, setup {} ms), {} bytes",
        start.elapsed().as_secs_f64(),
        response.synthesis_ms,
        response.gpu_compute_ms,
        response.srs_load_ms,
        response.proof.len()
    );
    assert_eq!(response.partitions, NI_PARTITIONS);
    assert!(response.verified);
    // An aggregate, not 13 proofs of 192 bytes back to back.
    assert_ne!(response.proof.len(), 192 * NI_PARTITIONS as usize);
    let srs = layout().params.join("v28-fil-inner-product-v1.srs");
    assert!(srs.exists(), "no SRS at {}", srs.display());

    assert!(
        verify_seal(&c1, sector, &response.proof)?,
        "verify_seal rejected the daemon's NI-PoRep proof"
    );
    let mut bad = response.proof.clone();
    let middle = bad.len() / 2;
    bad[middle] ^= 1;
    assert!(!verify_seal(&c1, sector, &bad).unwrap_or(false));
    // Another sector's public inputs do not verify either.
    assert!(!verify_seal(&c1, sector + 1, &response.proof).unwrap_or(false));
    Ok(())
}

/// Proves 13 partitions on the CPU: about 15 minutes on a 2-core machine, more than CI's
/// time allows; the GPU variant below runs in every `run-tests`, and this one by hand
/// (`cargo test -p cuzk-daemon --test ni_porep -- --ignored filecoin_`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "slow on the CPU (13 partitions); run by hand, the gpu_ variant runs on the GPU"]
async fn filecoin_daemon_ni_porep_c2_2kib_verify_seal() -> Result<()> {
    ni_porep_through_the_daemon("cpu", 131).await
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a CUDA GPU"]
async fn gpu_daemon_ni_porep_c2_2kib_verify_seal() -> Result<()> {
    // In a bundle, run-tests points CUZK_DAEMON_BIN at the bundle's daemon.
    ni_porep_through_the_daemon("cuda", 132).await
}
