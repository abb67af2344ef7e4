//! Test fixtures: 2KiB sectors sealed with filecoin-proofs, and the shared parameter cache
//! under target/ that every test of the binary uses.

use anyhow::{ensure, Result};
use cuzk_filecoin::{CachePolicy, DigestCheck, ParamCache};
use filecoin_proofs::{
    add_piece, generate_piece_commitment, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, Commitment, PaddedBytesAmount, PieceInfo, PoRepConfig, ProverId,
    SealCommitPhase1Output, SealPreCommitOutput, SectorShape2KiB, UnpaddedBytesAmount,
    SECTOR_SIZE_2_KIB,
};
use std::fs::{File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::sector::SectorId;
use tempfile::TempDir;

pub type Tree = SectorShape2KiB;

/// The PoRep id filecoin-proofs' own tests use with API 1.2.0.
pub const TEST_POREP_ID: [u8; 32] = [129; 32];

/// A prover id that is a canonical field element (PoSt needs one).
pub const PROVER_ID: ProverId = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 0,
];

/// Randomness that is a canonical field element.
pub const RANDOMNESS: [u8; 32] = [
    9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 9, 8, 7, 6, 0,
];

pub fn init_logs() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        // Another test binary's subscriber cannot be here; a second init is harmless.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
    });
}

/// The target folder of this build (the parent of cargo's per-target temporary folder).
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR has a parent")
        .to_path_buf()
}

/// A fresh folder under target/tmp, removed when dropped.
pub fn temp_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("temporary folder under target/tmp")
}

/// The cache every test shares: filecoin-proofs' own parameter folder (so that its
/// verifiers read what cuzk generated), which `.cargo/config.toml` places under target/;
/// generation allowed for 2KiB sectors.
pub fn cache() -> &'static ParamCache {
    static CACHE: OnceLock<ParamCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        init_logs();
        let dir = ParamCache::filecoin_dir();
        let dir = std::path::absolute(&dir).expect("absolute parameter folder");
        assert!(
            dir.starts_with(target_dir()),
            "FIL_PROOFS_PARAMETER_CACHE ({}) must lie under {}: run through cargo, which sets it",
            dir.display(),
            target_dir().display()
        );
        ParamCache::with_policy(
            dir,
            CachePolicy {
                generate_up_to: SECTOR_SIZE_2_KIB,
                digests: DigestCheck::Verify,
                pce_on_disk: true,
            },
        )
    })
}

/// Serializes the PoRep proofs: each holds about 2 GB at its peak.
pub fn heavy() -> MutexGuard<'static, ()> {
    static HEAVY: Mutex<()> = Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn porep_config() -> PoRepConfig {
    PoRepConfig::new_groth16(SECTOR_SIZE_2_KIB, TEST_POREP_ID, ApiVersion::V1_2_0)
}

/// A pre-committed 2KiB sector: replica and cache folder on disk.
#[derive(Debug)]
pub struct Sealed {
    pub sector_id: SectorId,
    pub ticket: [u8; 32],
    pub comm_r: Commitment,
    pub comm_d: Commitment,
    pub piece_infos: Vec<PieceInfo>,
    pub pre_commit: SealPreCommitOutput,
    pub replica: PathBuf,
    pub cache_dir: PathBuf,
    pub _dir: TempDir,
}

/// Deterministic piece bytes for a sector.
pub fn piece_bytes(seed: u8) -> Vec<u8> {
    let n = UnpaddedBytesAmount::from(PaddedBytesAmount(SECTOR_SIZE_2_KIB)).0 as usize;
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Writes `data` as a staged sector file in `dir` and returns its piece infos.
pub fn stage(
    config: &PoRepConfig,
    dir: &Path,
    name: &str,
    data: &[u8],
) -> Result<(PathBuf, Vec<PieceInfo>)> {
    let size = config.unpadded_bytes_amount();
    let piece = dir.join(format!("{name}.piece"));
    File::create(&piece)?.write_all(data)?;
    let info = generate_piece_commitment(File::open(&piece)?, size)?;
    let staged = dir.join(format!("{name}.staged"));
    let mut out = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    add_piece(File::open(&piece)?, &mut out, size, &[])?;
    out.rewind()?;
    Ok((staged, vec![info]))
}

/// Pre-commits (phases 1 and 2) a 2KiB sector with filecoin-proofs.
pub fn seal(config: &PoRepConfig, prover_id: ProverId, sector: u64, seed: u8) -> Result<Sealed> {
    let dir = temp_dir("sector-");
    let cache_dir = dir.path().join("cache");
    std::fs::create_dir_all(&cache_dir)?;
    let (staged, piece_infos) = stage(config, dir.path(), "data", &piece_bytes(seed))?;
    let replica = dir.path().join("sealed");
    File::create(&replica)?;
    let sector_id = SectorId::from(sector);
    let ticket = [seed.wrapping_add(1); 32];
    let p1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        config,
        &cache_dir,
        &staged,
        &replica,
        prover_id,
        sector_id,
        ticket,
        &piece_infos,
    )?;
    let pre_commit = seal_pre_commit_phase2(config, p1, &cache_dir, &replica)?;
    Ok(Sealed {
        sector_id,
        ticket,
        comm_r: pre_commit.comm_r,
        comm_d: pre_commit.comm_d,
        piece_infos,
        pre_commit,
        replica,
        cache_dir,
        _dir: dir,
    })
}

/// Commit phase 1 of a sealed sector with the given interactive seed.
pub fn commit_phase1(
    config: &PoRepConfig,
    sealed: &Sealed,
    prover_id: ProverId,
    seed: [u8; 32],
) -> Result<SealCommitPhase1Output<Tree>> {
    let c1 = seal_commit_phase1::<_, Tree>(
        config,
        &sealed.cache_dir,
        &sealed.replica,
        prover_id,
        sealed.sector_id,
        sealed.ticket,
        seed,
        sealed.pre_commit.clone(),
        &sealed.piece_infos,
    )?;
    ensure!(c1.seed == seed, "C1 output carries another seed");
    Ok(c1)
}
