//! `cuzk-bench verify-c2`: filecoin-proofs-api's `verify_seal` of a PoRep C2 proof (the bytes
//! `cuzk prove --out` writes) against the C1 output it was proved from, bare or in Curio's
//! envelope. The verifying key is read from filecoin-proofs' parameter folder
//! (`FIL_PROOFS_PARAMETER_CACHE`), where the daemon that made the proof found or wrote it.

use anyhow::{bail, ensure, Context, Result};
use cuzk_filecoin::ids::prover_id_from_miner_id;
use std::path::PathBuf;
use std::time::Instant;
use storage_proofs_core::sector::SectorId;

/// Options of `cuzk-bench verify-c2`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The C1 output the proof was made from (filecoin-proofs-api JSON or Curio's envelope).
    #[arg(long)]
    c1: PathBuf,
    /// The proof: 192 bytes per partition, as `cuzk prove --out` writes it.
    #[arg(long)]
    proof: PathBuf,
    /// The miner actor id the sector belongs to (the prover id is derived from it).
    #[arg(long)]
    miner_id: u64,
    /// The sector number (default: the envelope's `SectorNum`).
    #[arg(long)]
    sector: Option<u64>,
}

pub fn run(args: &Args) -> Result<()> {
    let json = std::fs::read(&args.c1).with_context(|| format!("reading {}", args.c1.display()))?;
    let c1 = cuzk_filecoin::decode_c1(&json).context("decoding the C1 output")?;
    let sector = match args.sector {
        Some(s) => s,
        None => envelope_sector(&json)?,
    };
    let proof =
        std::fs::read(&args.proof).with_context(|| format!("reading {}", args.proof.display()))?;
    ensure!(
        !proof.is_empty() && proof.len() % 192 == 0,
        "{} holds {} bytes, not whole 192-byte partition proofs",
        args.proof.display(),
        proof.len()
    );
    let start = Instant::now();
    let ok = filecoin_proofs_api::seal::verify_seal(
        c1.registered_proof,
        c1.comm_r,
        c1.comm_d,
        prover_id_from_miner_id(args.miner_id),
        SectorId::from(sector),
        c1.ticket,
        c1.seed,
        &proof,
    )
    .context("verify_seal")?;
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let partitions = proof.len() / 192;
    if !ok {
        bail!(
            "verify_seal REJECTS the proof ({partitions} partitions, {:?}, miner {} sector {sector})",
            c1.registered_proof,
            args.miner_id
        );
    }
    println!(
        "verify-c2: verify_seal accepts the proof ({partitions} partitions, {:?}, miner {} sector {sector}) in {ms:.1} ms",
        c1.registered_proof, args.miner_id
    );
    Ok(())
}

/// The `SectorNum` of Curio's envelope.
fn envelope_sector(json: &[u8]) -> Result<u64> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(rename = "SectorNum")]
        sector_num: Option<u64>,
    }
    let e: Envelope = serde_json::from_slice(json).context("reading the C1 file as JSON")?;
    e.sector_num
        .context("the C1 file is not in Curio's envelope (no SectorNum): give --sector")
}
