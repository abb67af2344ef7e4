//! Fabricated C1 outputs (`cuzk_bench::fabricate`: 2KiB sectors that were never sealed, random
//! miner, sector and seed) proved through a spawned CPU daemon as Curio submits them (Curio's
//! envelope), each proof accepted by filecoin-proofs-api's `verify_seal`: API 1.0
//! (`StackedDrg2KiBV1`) and 1.1 (`StackedDrg2KiBV1_1`). API 1.2 has no registered interactive
//! proof, so no number a request could name: its output (filecoin-proofs' own type, test porep
//! id) is proved by cuzk-filecoin's CPU prover, the one the daemon's kinds run, and accepted by
//! filecoin-proofs' own `verify_seal`.
//!
//! Parameters live where cuzk-filecoin's tests keep them (`support`), generated when missing.
#![cfg(feature = "filecoin")]

mod common;
#[path = "../../cuzk-filecoin/tests/support/mod.rs"]
mod support;

use anyhow::{Context, Result};
use common::{assert_completed, prove, Launch, TestDaemon};
use cuzk_bench::fabricate::{fabricate, Api, Fabricated, Format, Porep, Size, Spec, Target, C1};
use cuzk_daemon::proto::{Priority, ProofKind, SubmitProofRequest};
use filecoin_proofs::{SectorShape2KiB, SECTOR_SIZE_2_KIB};
use std::time::Instant;
use storage_proofs_core::sector::SectorId;
use support::{cache, chain_number, curio_envelope, layout};

/// A CPU daemon over the tests' parameter folder, generating 2KiB parameters when missing.
fn daemon() -> TestDaemon {
    let config = format!(
        "[prover]\nbackend = \"cpu\"\n[filecoin]\nparam_dir = {:?}\ngenerate_up_to = \"2KiB\"\n",
        layout().params.display().to_string()
    );
    Launch::new(&config).start()
}

/// A fabricated 2KiB C1 output at `api` with random ids (printed, so that a failure can be
/// made again).
async fn fabricated(api: Api) -> Result<Fabricated> {
    let spec = Spec {
        target: Target::new(Size::KiB2, api, Porep::Interactive),
        miner: rand::random::<u64>() % 1_000_000 + 1000,
        sector: rand::random::<u32>().into(),
        seed: rand::random(),
    };
    eprintln!("fabricated 2KiB C1, API {api:?}: {spec:?}");
    let out = tokio::task::spawn_blocking(move || fabricate(&spec)).await??;
    Ok(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn filecoin_daemon_proves_fabricated_2kib_c1s_that_verify_seal_accepts() -> Result<()> {
    let daemon = daemon();
    let mut client = daemon.client().await;
    for api in [Api::V1_0, Api::V1_1] {
        let f = fabricated(api).await?;
        let c1 = f.api()?;
        let (miner, sector) = (f.spec.miner, f.spec.sector);
        let envelope = f.encode(Format::Wrapper)?;
        assert_eq!(
            envelope,
            curio_envelope(sector, &f.json()?, SECTOR_SIZE_2_KIB),
            "not Curio's envelope"
        );
        let request = SubmitProofRequest {
            request_id: format!("porep-{miner}-{sector}"),
            proof_kind: ProofKind::PorepSealCommit.into(),
            sector_size: SECTOR_SIZE_2_KIB,
            registered_proof: chain_number(c1.registered_proof),
            priority: Priority::Normal.into(),
            vanilla_proof: envelope,
            sector_number: sector,
            miner_id: miner,
            ..SubmitProofRequest::default()
        };
        let start = Instant::now();
        let response = prove(&mut client, request).await;
        assert_completed(&response);
        eprintln!(
            "fabricated 2KiB C1, API {api:?}: C2 through the CPU daemon in {:.2} s (setup {} ms, synthesis {} ms, prove {} ms)",
            start.elapsed().as_secs_f64(),
            response.srs_load_ms,
            response.synthesis_ms,
            response.gpu_compute_ms
        );
        assert_eq!(response.proof.len(), 192);
        let ok = filecoin_proofs_api::seal::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            f.prover_id,
            SectorId::from(sector),
            c1.ticket,
            c1.seed,
            &response.proof,
        )?;
        assert!(
            ok,
            "verify_seal rejected the proof of a fabricated C1 (API {api:?})"
        );
    }
    drop(daemon);

    // API 1.2: filecoin-proofs' own configuration and types.
    let f = fabricated(Api::V1_2).await?;
    assert!(f.spec.target.registered_proof().is_none());
    let C1::Base(c1) = f.c1 else {
        panic!("a 2KiB sector is of the base shape")
    };
    let (config, prover_id, sector) = (f.config.clone(), f.prover_id, f.spec.sector);
    let public = (c1.comm_r, c1.comm_d, c1.ticket, c1.seed);
    let start = Instant::now();
    let proved = tokio::task::spawn_blocking(move || {
        cuzk_filecoin::Prover::cpu(cache())
            .seal_commit_phase2_v1::<SectorShape2KiB>(&config, c1, prover_id, sector)
    })
    .await?
    .context("C2 of the API 1.2 output")?;
    eprintln!(
        "fabricated 2KiB C1, API 1.2: C2 on cuzk-filecoin's CPU prover in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    let (comm_r, comm_d, ticket, seed) = public;
    let ok = filecoin_proofs::verify_seal::<SectorShape2KiB>(
        &f.config,
        comm_r,
        comm_d,
        prover_id,
        SectorId::from(sector),
        ticket,
        seed,
        &proved.proof,
    )?;
    assert!(
        ok,
        "verify_seal rejected the proof of a fabricated API 1.2 C1"
    );
    Ok(())
}
