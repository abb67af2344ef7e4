//! `cuzk-bench soak-c1`: the Filecoin inputs of the bundle's `run-soak`. `make` seals a 2KiB
//! sector with filecoin-proofs (CPU, seconds) and writes its C1 output as Curio sends it
//! (filecoin-proofs-api JSON); `verify` checks PoRep C2 proofs of that sector, as the daemon
//! returned them, with filecoin-proofs' own `verify_seal`.

use anyhow::{ensure, Context, Result};
use cuzk_filecoin::ids::prover_id_from_miner_id;
use filecoin_proofs_api::seal as api;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use storage_proofs_core::sector::SectorId;

/// Options of `cuzk-bench soak-c1`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Seals a 2KiB sector and writes its C1 output.
    Make {
        /// Folder for filecoin-proofs' parent cache (`parents/`) and the sector (`soak-sector/`).
        #[arg(long)]
        work_dir: PathBuf,
        /// Where to write the C1 output (JSON).
        #[arg(long)]
        out: PathBuf,
        /// The miner the sector belongs to (the daemon derives the prover id from it).
        #[arg(long, default_value_t = 1000)]
        miner: u64,
        /// The sector number.
        #[arg(long, default_value_t = 1)]
        sector: u64,
    },
    /// Checks proofs (192-byte files) of the sector of a C1 output with verify_seal.
    Verify {
        /// The parameter folder the daemon used (its `[filecoin] param_dir`).
        #[arg(long)]
        params: PathBuf,
        /// The C1 output the proofs are of.
        #[arg(long)]
        c1: PathBuf,
        #[arg(long, default_value_t = 1000)]
        miner: u64,
        #[arg(long, default_value_t = 1)]
        sector: u64,
        /// The proof files.
        proofs: Vec<PathBuf>,
    },
}

/// The ticket and seed of the sealed sector.
const TICKET: [u8; 32] = [2; 32];
const SEED: [u8; 32] = [3; 32];

pub fn run(args: &Args) -> Result<()> {
    match &args.cmd {
        Cmd::Make {
            work_dir,
            out,
            miner,
            sector,
        } => make(work_dir, out, *miner, *sector),
        Cmd::Verify {
            params,
            c1,
            miner,
            sector,
            proofs,
        } => verify(params, c1, *miner, *sector, proofs),
    }
}

fn make(work_dir: &Path, out: &Path, miner: u64, sector: u64) -> Result<()> {
    let work = std::path::absolute(work_dir)?;
    let parents = work.join("parents");
    fs::create_dir_all(&parents)?;
    // filecoin-proofs reads this once, on first use: before any of its calls.
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    let dir = work.join("soak-sector");
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    let cache_dir = dir.join("cache");
    fs::create_dir_all(&cache_dir)?;
    let t = std::time::Instant::now();
    let rp = filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1;
    let size = filecoin_proofs::UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(
        filecoin_proofs::SECTOR_SIZE_2_KIB,
    ));
    let piece = dir.join("piece");
    // Deterministic, varied bytes (xorshift64).
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let bytes: Vec<u8> = (0..u64::from(size))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    File::create(&piece)?.write_all(&bytes)?;
    let info = api::generate_piece_commitment(rp, File::open(&piece)?, size)?;
    let staged = dir.join("staged");
    let mut staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    api::add_piece(rp, File::open(&piece)?, &mut staged_file, size, &[])?;
    drop(staged_file);
    let sealed = dir.join("sealed");
    File::create(&sealed)?;
    let prover_id = prover_id_from_miner_id(miner);
    let sector_id = SectorId::from(sector);
    let p1 = api::seal_pre_commit_phase1(
        rp,
        &cache_dir,
        &staged,
        &sealed,
        prover_id,
        sector_id,
        TICKET,
        std::slice::from_ref(&info),
    )?;
    let p2 = api::seal_pre_commit_phase2(p1, &cache_dir, &sealed)?;
    let c1 = api::seal_commit_phase1(
        &cache_dir,
        &sealed,
        prover_id,
        sector_id,
        TICKET,
        SEED,
        p2,
        &[info],
    )?;
    let json = serde_json::to_vec(&c1).context("encoding the C1 output")?;
    fs::write(out, &json).with_context(|| format!("writing {}", out.display()))?;
    fs::remove_dir_all(&dir)?;
    println!(
        "soak-c1: sealed a 2KiB sector (miner {miner}, sector {sector}) in {:.1} s; C1 output ({} bytes) in {}",
        t.elapsed().as_secs_f64(),
        json.len(),
        out.display()
    );
    Ok(())
}

fn verify(params: &Path, c1: &Path, miner: u64, sector: u64, proofs: &[PathBuf]) -> Result<()> {
    // filecoin-proofs reads this once, on first use: before any of its calls.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", std::path::absolute(params)?);
    let json = fs::read(c1).with_context(|| format!("reading {}", c1.display()))?;
    let c1 = cuzk_filecoin::decode_c1(&json).context("decoding the C1 output")?;
    let prover_id = prover_id_from_miner_id(miner);
    let mut rejected = Vec::new();
    for path in proofs {
        let proof = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let ok = api::verify_seal(
            c1.registered_proof,
            c1.comm_r,
            c1.comm_d,
            prover_id,
            SectorId::from(sector),
            c1.ticket,
            c1.seed,
            &proof,
        )
        .with_context(|| format!("verify_seal of {}", path.display()))?;
        if !ok {
            rejected.push(path.display().to_string());
        }
    }
    println!(
        "soak-c1: verify_seal accepted {} of {} PoRep C2 proofs",
        proofs.len() - rejected.len(),
        proofs.len()
    );
    ensure!(
        rejected.is_empty(),
        "verify_seal rejected {}",
        rejected.join(", ")
    );
    Ok(())
}
