//! Test fixtures: 2KiB sectors sealed with filecoin-proofs, and the parameter cache the tests
//! of a binary share.
//!
//! Where the files go: under `$CUZK_FILECOIN_DIR` when set; else, run by cargo (which points
//! `FIL_PROOFS_PARAMETER_CACHE` and `FIL_PROOFS_PARENT_CACHE` under target/), under target/;
//! else (a bundled binary on a GPU host) under `./filecoin-work`. Outside cargo the two
//! variables are set here, before filecoin-proofs first reads them.
// Each test binary (the CPU one, the GPU one) uses its own part of the fixtures.
#![allow(dead_code)]

use anyhow::{ensure, Result};
use base64::Engine as _;
use cuzk_filecoin::{CachePolicy, DigestCheck, Generator, ParamCache};
use filecoin_proofs::{
    add_piece, generate_piece_commitment, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2, Commitment, PaddedBytesAmount, PieceInfo, PoRepConfig, ProverId,
    SealCommitPhase1Output, SealPreCommitOutput, SectorShape2KiB, UnpaddedBytesAmount,
    SECTOR_SIZE_2_KIB,
};
use std::fs::{self, File, OpenOptions};
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::sector::SectorId;
use tempfile::TempDir;

/// Names the folder for parameters, parent caches and sectors outside cargo's target/.
pub const WORK_DIR_ENV: &str = "CUZK_FILECOIN_DIR";
/// The folder used outside cargo when [`WORK_DIR_ENV`] is not set, relative to the current
/// directory.
pub const DEFAULT_WORK_DIR: &str = "filecoin-work";

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

/// Where this binary's files go.
#[derive(Debug)]
pub struct Layout {
    /// The parameter folder: filecoin-proofs' own, so its verifiers read what cuzk generated.
    pub params: PathBuf,
    /// Sealed sectors and other temporary folders.
    pub scratch: PathBuf,
}

/// The layout, chosen once per process (see the module docs).
pub fn layout() -> &'static Layout {
    static LAYOUT: OnceLock<Layout> = OnceLock::new();
    LAYOUT.get_or_init(|| {
        init_logs();
        match std::env::var_os(WORK_DIR_ENV) {
            Some(dir) => standalone(PathBuf::from(dir)),
            None if std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").is_some() => under_target(),
            None => standalone(PathBuf::from(DEFAULT_WORK_DIR)),
        }
    })
}

/// Under cargo's target/, as `.cargo/config.toml` sets filecoin-proofs' folders.
fn under_target() -> Layout {
    let params =
        std::path::absolute(ParamCache::filecoin_dir()).expect("absolute parameter folder");
    assert!(
        params.starts_with(target_dir()),
        "FIL_PROOFS_PARAMETER_CACHE ({}) must lie under {}: run through cargo, which sets it, or set {WORK_DIR_ENV}",
        params.display(),
        target_dir().display()
    );
    Layout {
        params,
        scratch: PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    }
}

/// Everything under `dir`, filecoin-proofs' folders included.
fn standalone(dir: PathBuf) -> Layout {
    let dir = std::path::absolute(&dir).expect("absolute work folder");
    let (params, parents, scratch) = (dir.join("params"), dir.join("parents"), dir.join("tmp"));
    for d in [&params, &parents, &scratch] {
        std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
    }
    // Every test asks for the layout before it calls filecoin-proofs, which reads these once.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    assert_eq!(
        std::path::absolute(ParamCache::filecoin_dir()).expect("absolute parameter folder"),
        params,
        "filecoin-proofs read its settings before the tests set them"
    );
    Layout { params, scratch }
}

/// A fresh folder in the layout's scratch folder, removed when dropped.
pub fn temp_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&layout().scratch)
        .expect("temporary folder in the scratch folder")
}

/// The tests' cache policy: generation allowed for 2KiB sectors, digests checked.
pub fn test_policy(generator: Generator) -> CachePolicy {
    CachePolicy {
        generate_up_to: SECTOR_SIZE_2_KIB,
        generator,
        digests: DigestCheck::Verify,
        pce_on_disk: true,
        write_generated: true,
        native_witness: true,
    }
}

/// The cache the CPU tests share: filecoin-proofs' own parameter folder (so that its
/// verifiers read what cuzk generated), parameters generated on the CPU.
pub fn cache() -> &'static ParamCache {
    static CACHE: OnceLock<ParamCache> = OnceLock::new();
    CACHE.get_or_init(|| ParamCache::with_policy(&layout().params, test_policy(Generator::Cpu)))
}

/// Serializes the PoRep proofs: each holds about 2 GB at its peak.
pub fn heavy() -> MutexGuard<'static, ()> {
    static HEAVY: Mutex<()> = Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn porep_config() -> PoRepConfig {
    porep_config_of(SECTOR_SIZE_2_KIB)
}

/// The test PoRep configuration (filecoin-proofs' test id, API 1.2.0) of `sector_size`.
pub fn porep_config_of(sector_size: u64) -> PoRepConfig {
    PoRepConfig::new_groth16(sector_size, TEST_POREP_ID, ApiVersion::V1_2_0)
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

/// Deterministic piece bytes for a 2KiB sector.
pub fn piece_bytes(seed: u8) -> Vec<u8> {
    piece_bytes_of(SECTOR_SIZE_2_KIB, seed)
}

/// Deterministic piece bytes filling a sector of `sector_size` bytes.
pub fn piece_bytes_of(sector_size: u64, seed: u8) -> Vec<u8> {
    let n = UnpaddedBytesAmount::from(PaddedBytesAmount(sector_size)).0 as usize;
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

/// Pre-commits (phases 1 and 2) a sector of `config`'s size (2KiB or 8MiB: the shapes of
/// [`Tree`]) with filecoin-proofs.
pub fn seal(config: &PoRepConfig, prover_id: ProverId, sector: u64, seed: u8) -> Result<Sealed> {
    let dir = temp_dir("sector-");
    let cache_dir = dir.path().join("cache");
    std::fs::create_dir_all(&cache_dir)?;
    let data = piece_bytes_of(u64::from(config.sector_size), seed);
    let (staged, piece_infos) = stage(config, dir.path(), "data", &data)?;
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

/// Seals a 2KiB sector through filecoin-proofs-api (the registered proof's own PoRep id) and
/// returns its C1 output as the JSON Lotus/Curio send.
pub fn api_c1_json(
    prover_id: ProverId,
    sector: u64,
) -> Result<(filecoin_proofs_api::seal::SealCommitPhase1Output, Vec<u8>)> {
    api_c1_json_of(
        filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1,
        prover_id,
        sector,
    )
}

/// Like [`api_c1_json`] for a NI-PoRep sector (`StackedDrg2KiBV1_2_Feat_NonInteractivePoRep`,
/// number 15): 13 partitions of 2 challenges, drawn without the seed.
pub fn ni_c1_json(
    prover_id: ProverId,
    sector: u64,
) -> Result<(filecoin_proofs_api::seal::SealCommitPhase1Output, Vec<u8>)> {
    api_c1_json_of(
        filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        prover_id,
        sector,
    )
}

/// Seals a 2KiB sector of registered proof `rp` through filecoin-proofs-api and returns its
/// C1 output, as a value and as JSON.
pub fn api_c1_json_of(
    rp: filecoin_proofs_api::RegisteredSealProof,
    prover_id: ProverId,
    sector: u64,
) -> Result<(filecoin_proofs_api::seal::SealCommitPhase1Output, Vec<u8>)> {
    use filecoin_proofs_api::seal as api;
    let dir = temp_dir("api-sector-");
    let cache_dir = dir.path().join("cache");
    fs::create_dir_all(&cache_dir)?;
    let size = filecoin_proofs::UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(
        SECTOR_SIZE_2_KIB,
    ));
    let piece = dir.path().join("piece");
    File::create(&piece)?.write_all(&piece_bytes(5))?;
    let info = api::generate_piece_commitment(rp, File::open(&piece)?, size)?;
    let staged = dir.path().join("staged");
    let mut out = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    api::add_piece(rp, File::open(&piece)?, &mut out, size, &[])?;
    let sealed = dir.path().join("sealed");
    File::create(&sealed)?;
    let sector_id = SectorId::from(sector);
    let ticket = [2u8; 32];
    let seed = [3u8; 32];
    let p1 = api::seal_pre_commit_phase1(
        rp,
        &cache_dir,
        &staged,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        std::slice::from_ref(&info),
    )?;
    let p2 = api::seal_pre_commit_phase2(p1, &cache_dir, &sealed)?;
    let c1 = api::seal_commit_phase1(
        &cache_dir,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        seed,
        p2,
        &[info],
    )?;
    let json = serde_json::to_vec(&c1)?;
    Ok((c1, json))
}

/// Curio's envelope: `{"SectorNum", "Phase1Out": base64(C1 JSON), "SectorSize"}`.
pub fn curio_envelope(sector: u64, c1_json: &[u8], sector_size: u64) -> Vec<u8> {
    let b64 = base64::engine::general_purpose::STANDARD.encode(c1_json);
    format!(r#"{{"SectorNum":{sector},"Phase1Out":"{b64}","SectorSize":{sector_size}}}"#)
        .into_bytes()
}

/// A WinningPoSt vanilla proof (bincode) of a freshly sealed 2KiB sector, and the sector.
pub fn winning_vanilla(
    prover_id: ProverId,
    sector: u64,
    seed: u8,
    randomness: &[u8; 32],
) -> Result<(Sealed, Vec<u8>)> {
    let sealed = seal(&porep_config(), prover_id, sector, seed)?;
    let config = filecoin_proofs_api::RegisteredPoStProof::StackedDrgWinning2KiBV1.as_v1_config();
    let mut vanilla = post_vanilla(
        &config,
        std::slice::from_ref(&sealed),
        prover_id,
        randomness,
    )?;
    let one = vanilla.pop().expect("one sector, one vanilla proof");
    Ok((sealed, one))
}

/// `count` freshly sealed 2KiB sectors (numbers from `first`, data from `seed` on) and their
/// WindowPoSt (`StackedDrgWindow2KiBV1_2`) vanilla proofs for `randomness`, bincode, one per
/// sector, with filecoin-proofs.
pub fn window_vanilla(
    prover_id: ProverId,
    first: u64,
    count: usize,
    seed: u8,
    randomness: &[u8; 32],
) -> Result<(Vec<Sealed>, Vec<Vec<u8>>)> {
    let sealed: Vec<Sealed> = (0..count)
        .map(|i| seal(&porep_config(), prover_id, first + i as u64, seed + i as u8))
        .collect::<Result<_>>()?;
    let config = filecoin_proofs_api::RegisteredPoStProof::StackedDrgWindow2KiBV1_2.as_v1_config();
    let vanilla = post_vanilla(&config, &sealed, prover_id, randomness)?;
    Ok((sealed, vanilla))
}

/// The PoSt vanilla proofs of `sealed` under `config` for `randomness`, bincode, one per
/// sector, as filecoin-proofs-api's `generate_single_vanilla_proof` makes them.
pub fn post_vanilla(
    config: &filecoin_proofs::PoStConfig,
    sealed: &[Sealed],
    prover_id: ProverId,
    randomness: &[u8; 32],
) -> Result<Vec<Vec<u8>>> {
    use filecoin_proofs::{
        generate_fallback_sector_challenges, generate_single_vanilla_proof, PrivateReplicaInfo,
    };
    let ids: Vec<SectorId> = sealed.iter().map(|s| s.sector_id).collect();
    let challenges =
        generate_fallback_sector_challenges::<Tree>(config, randomness, &ids, prover_id)?;
    let mut vanilla = Vec::new();
    for s in sealed {
        let replica =
            PrivateReplicaInfo::<Tree>::new(s.replica.clone(), s.comm_r, s.cache_dir.clone())?;
        let v = generate_single_vanilla_proof::<Tree>(
            config,
            s.sector_id,
            &replica,
            &challenges[&s.sector_id],
        )?;
        vanilla.push(bincode::serialize(&v)?);
    }
    Ok(vanilla)
}

/// A SnapDeals update of a freshly sealed CC sector with new data: the CC sector, the new
/// commitments and the vanilla partition proofs (the update's files live in `_dir`).
pub struct SnapUpdate {
    pub cc: Sealed,
    pub comm_r_new: Commitment,
    pub comm_d_new: Commitment,
    pub vanilla: Vec<filecoin_proofs::PartitionProof<Tree>>,
    pub _dir: TempDir,
}

/// Seals CC sector `sector` (from `seal_seed`), encodes a piece made from `piece_seed` into it
/// in a temporary folder named from `prefix`, and makes the update's vanilla proofs, with
/// filecoin-proofs throughout.
pub fn snap_update(sector: u64, seal_seed: u8, piece_seed: u8, prefix: &str) -> Result<SnapUpdate> {
    snap_update_of(
        filecoin_proofs_api::RegisteredUpdateProof::StackedDrg2KiBV1,
        sector,
        seal_seed,
        piece_seed,
        prefix,
    )
}

/// [`snap_update`] of a sector of `update`'s size (2KiB or 8MiB: the shapes of [`Tree`]).
pub fn snap_update_of(
    update: filecoin_proofs_api::RegisteredUpdateProof,
    sector: u64,
    seal_seed: u8,
    piece_seed: u8,
    prefix: &str,
) -> Result<SnapUpdate> {
    use filecoin_proofs::{encode_into, generate_partition_proofs, SectorUpdateConfig};
    let size = u64::from(update.sector_size());
    let porep = porep_config_of(size);
    let cc = seal(&porep, PROVER_ID, sector, seal_seed)?;
    let update_porep = update.as_v1_config();
    let config = SectorUpdateConfig::from_porep_config(&update_porep);
    let dir = temp_dir(prefix);
    let new_cache = dir.path().join("cache");
    fs::create_dir_all(&new_cache)?;
    let new_replica = dir.path().join("replica");
    File::create(&new_replica)?.set_len(fs::metadata(&cc.replica)?.len())?;
    let (staged, infos) = stage(
        &porep,
        dir.path(),
        "new-data",
        &piece_bytes_of(size, piece_seed),
    )?;
    let encoded = encode_into::<Tree>(
        &config,
        &new_replica,
        &new_cache,
        &cc.replica,
        &cc.cache_dir,
        &staged,
        &infos,
    )?;
    let vanilla = generate_partition_proofs::<Tree>(
        config,
        cc.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &cc.replica,
        &cc.cache_dir,
        &new_replica,
        &new_cache,
    )?;
    Ok(SnapUpdate {
        cc,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla,
        _dir: dir,
    })
}

/// Go's `abi.RegisteredSealProof` number of `proof`, as Curio sends it.
pub fn chain_number(proof: filecoin_proofs_api::RegisteredSealProof) -> u64 {
    (0..64)
        .find(|&n| cuzk_filecoin::ids::registered_seal_proof(n).is_ok_and(|r| r == proof))
        .expect("a registered proof has a number")
}
