//! `cuzk-bench soak-c1`: the Filecoin inputs of the bundle's `run-soak`. `make` seals two 2KiB
//! sectors with filecoin-proofs (CPU, seconds) and writes, into one folder, what Curio would
//! send for them: the C1 output of sector 1 (filecoin-proofs-api JSON), WinningPoSt vanilla
//! proofs of sector 1 and WindowPoSt vanilla proofs of the partition of sectors 1 and 2 (one
//! bincode `FallbackPoStSectorProof` per sector, for each of a few randomness values), and the
//! SnapDeals vanilla proofs (one bincode `PartitionProof` per partition) of new data encoded
//! into sector 1, with the commitments, sector ids and randomness in `filecoin.toml`. `verify`
//! checks the proofs the daemon returned for them with filecoin-proofs' own verifiers:
//! `verify_seal`, `verify_winning_post`, `verify_window_post` (after
//! `merge_window_post_partition_proofs` of the one partition) and
//! `verify_empty_sector_update_proof`.

use anyhow::{bail, ensure, Context, Result};
use cuzk_filecoin::ids::{hex, prover_id_from_miner_id};
use filecoin_proofs_api::seal as api;
use filecoin_proofs_api::{
    post, update, Commitment, PartitionSnarkProof, PieceInfo, PrivateReplicaInfo,
    PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
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
    /// Seals two 2KiB sectors and writes the PoRep, PoSt and SnapDeals inputs of the soak.
    Make {
        /// Folder for filecoin-proofs' parent cache (`parents/`) and the sectors
        /// (`soak-sector/`, removed afterwards).
        #[arg(long)]
        work_dir: PathBuf,
        /// Where to write the inputs: `filecoin.toml` and the files it names.
        #[arg(long)]
        out_dir: PathBuf,
        /// The miner the sectors belong to (the daemon derives the prover id from it).
        #[arg(long, default_value_t = 1000)]
        miner: u64,
        /// The number of the first sector (the second is the next one).
        #[arg(long, default_value_t = 1)]
        sector: u64,
        /// Randomness values of the PoSt inputs (vanilla proofs are made for each).
        #[arg(long, default_value_t = 16)]
        randomness: usize,
    },
    /// Checks proofs of the inputs of `make` with filecoin-proofs' verifiers. Each file's
    /// name says what it is: `porep-<job>.bin`, `winning-<job>-r<k>.bin`,
    /// `window-<job>-r<k>.bin` (k: the randomness' position in filecoin.toml), `snap-<job>.bin`.
    Verify {
        /// The parameter folder the daemon used (its `[filecoin] param_dir`).
        #[arg(long)]
        params: PathBuf,
        /// The folder `make` wrote.
        #[arg(long)]
        dir: PathBuf,
        /// The proof files.
        proofs: Vec<PathBuf>,
    },
}

/// The ticket and seed of the sealed sectors.
const TICKET: [u8; 32] = [2; 32];
const SEED: [u8; 32] = [3; 32];
/// The manifest's name in the output folder.
pub const MANIFEST: &str = "filecoin.toml";
const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
/// filecoin-proofs-api's proofs of 2KiB sectors, with the numbers Curio sends for them.
const WINNING: (RegisteredPoStProof, u64) = (RegisteredPoStProof::StackedDrgWinning2KiBV1, 0);
/// Go's `StackedDrgWindow2KiBV1_1` (10) is filecoin-proofs-api's `V1_2`.
const WINDOW: (RegisteredPoStProof, u64) = (RegisteredPoStProof::StackedDrgWindow2KiBV1_2, 10);
const UPDATE: (RegisteredUpdateProof, u64) = (RegisteredUpdateProof::StackedDrg2KiBV1, 0);
const SEAL_NUMBER: u64 = 5;

/// `filecoin.toml`: everything a soak needs to send the requests and to check the proofs.
/// Commitments and randomness are lowercase hex of 32 bytes; file names are relative to the
/// folder.
#[derive(Serialize, Deserialize, Debug)]
struct Manifest {
    miner: u64,
    sector_size: u64,
    porep: PorepInputs,
    winning: PostInputs,
    window: PostInputs,
    snap: SnapInputs,
}

#[derive(Serialize, Deserialize, Debug)]
struct PorepInputs {
    registered_proof: u64,
    sector: u64,
    /// The C1 output (filecoin-proofs-api JSON).
    c1: String,
}

#[derive(Serialize, Deserialize, Debug)]
struct PostInputs {
    registered_proof: u64,
    partition: u32,
    /// The sectors of the proof, in the order of their vanilla proofs.
    sectors: Vec<u64>,
    comm_r: Vec<String>,
    randomness: Vec<String>,
    /// For each randomness, one vanilla proof file per sector.
    vanilla: Vec<Vec<String>>,
}

#[derive(Serialize, Deserialize, Debug)]
struct SnapInputs {
    registered_proof: u64,
    sector: u64,
    comm_r_old: String,
    comm_r_new: String,
    comm_d_new: String,
    /// One vanilla proof file per partition.
    vanilla: Vec<String>,
}

pub fn run(args: &Args) -> Result<()> {
    match &args.cmd {
        Cmd::Make {
            work_dir,
            out_dir,
            miner,
            sector,
            randomness,
        } => make(work_dir, out_dir, *miner, *sector, *randomness),
        Cmd::Verify {
            params,
            dir,
            proofs,
        } => verify(params, dir, proofs),
    }
}

/// A pre-committed 2KiB sector.
struct Sealed {
    id: SectorId,
    replica: PathBuf,
    cache: PathBuf,
    comm_r: Commitment,
    pre_commit: api::SealPreCommitPhase2Output,
    piece: PieceInfo,
}

/// Deterministic, varied bytes (xorshift64 from `seed`).
fn data(seed: u64, n: u64) -> Vec<u8> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Stages `bytes` as a 2KiB sector's data in `dir`: the staged file and its piece.
fn stage(dir: &Path, name: &str, bytes: &[u8]) -> Result<(PathBuf, PieceInfo)> {
    let size = filecoin_proofs::UnpaddedBytesAmount(bytes.len() as u64);
    let piece = dir.join(format!("{name}.piece"));
    File::create(&piece)?.write_all(bytes)?;
    let info = api::generate_piece_commitment(SEAL, File::open(&piece)?, size)?;
    let staged = dir.join(format!("{name}.staged"));
    let mut staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    api::add_piece(SEAL, File::open(&piece)?, &mut staged_file, size, &[])?;
    Ok((staged, info))
}

/// Seals (pre-commit phases 1 and 2) 2KiB sector `sector` in `dir/<sector>/`.
fn seal(dir: &Path, prover_id: [u8; 32], sector: u64, seed: u64) -> Result<Sealed> {
    let dir = dir.join(sector.to_string());
    let cache = dir.join("cache");
    fs::create_dir_all(&cache)?;
    let size = filecoin_proofs::UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(
        filecoin_proofs::SECTOR_SIZE_2_KIB,
    ));
    let (staged, piece) = stage(&dir, "data", &data(seed, u64::from(size)))?;
    let replica = dir.join("sealed");
    File::create(&replica)?;
    let id = SectorId::from(sector);
    let p1 = api::seal_pre_commit_phase1(
        SEAL,
        &cache,
        &staged,
        &replica,
        prover_id,
        id,
        TICKET,
        std::slice::from_ref(&piece),
    )?;
    let pre_commit = api::seal_pre_commit_phase2(p1, &cache, &replica)?;
    Ok(Sealed {
        id,
        replica,
        cache,
        comm_r: pre_commit.comm_r,
        pre_commit,
        piece,
    })
}

/// Randomness `k` of the PoSt inputs: distinct first 8 bytes (so distinct Curio request
/// ids), a canonical field element (top byte zero).
fn randomness(k: usize) -> [u8; 32] {
    let mut r = [0u8; 32];
    for (i, b) in r.iter_mut().enumerate() {
        *b = (k as u8)
            .wrapping_mul(37)
            .wrapping_add((i as u8).wrapping_mul(11))
            .wrapping_add(1);
    }
    r[0] = k as u8;
    r[31] = 0;
    r
}

/// The PoSt vanilla proofs of `sectors` for randomness `r`, as Curio makes them with
/// filecoin-proofs-api (`generate_fallback_sector_challenges`, then
/// `generate_single_vanilla_proof` per sector): bincode, one per sector.
fn post_vanilla(
    proof: RegisteredPoStProof,
    sectors: &[&Sealed],
    prover_id: [u8; 32],
    r: &[u8; 32],
) -> Result<Vec<Vec<u8>>> {
    let ids: Vec<SectorId> = sectors.iter().map(|s| s.id).collect();
    let challenges = post::generate_fallback_sector_challenges(proof, r, &ids, prover_id)?;
    sectors
        .iter()
        .map(|s| {
            let replica =
                PrivateReplicaInfo::new(proof, s.comm_r, s.cache.clone(), s.replica.clone());
            post::generate_single_vanilla_proof(proof, s.id, &replica, &challenges[&s.id])
        })
        .collect()
}

fn make(work_dir: &Path, out: &Path, miner: u64, sector: u64, n_randomness: usize) -> Result<()> {
    ensure!(
        (1..=256).contains(&n_randomness),
        "--randomness is 1 to 256"
    );
    let work = std::path::absolute(work_dir)?;
    let parents = work.join("parents");
    fs::create_dir_all(&parents)?;
    // filecoin-proofs reads this once, on first use: before any of its calls.
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    let dir = work.join("soak-sector");
    if dir.exists() {
        fs::remove_dir_all(&dir)?;
    }
    fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let t = std::time::Instant::now();
    let prover_id = prover_id_from_miner_id(miner);

    // Sector 1: its C1 output, WinningPoSt, WindowPoSt, and the sector key of the update.
    let one = seal(&dir, prover_id, sector, 0x2545_f491_4f6c_dd1d)?;
    let two = seal(&dir, prover_id, sector + 1, 0x9e37_79b9_7f4a_7c15)?;
    let c1 = api::seal_commit_phase1(
        &one.cache,
        &one.replica,
        prover_id,
        one.id,
        TICKET,
        SEED,
        one.pre_commit.clone(),
        std::slice::from_ref(&one.piece),
    )?;
    let json = serde_json::to_vec(&c1).context("encoding the C1 output")?;
    let c1_name = "porep-c1.json";
    fs::write(out.join(c1_name), &json)?;
    let sealed_at = t.elapsed();

    // WinningPoSt: the challenged sector of a set of one (as Curio asks filecoin-proofs), its
    // vanilla proof for each randomness.
    let rs: Vec<[u8; 32]> = (0..n_randomness).map(randomness).collect();
    let mut winning = Vec::new();
    for (k, r) in rs.iter().enumerate() {
        let picked = post::generate_winning_post_sector_challenge(WINNING.0, r, 1, prover_id)?;
        ensure!(
            picked == [0],
            "WinningPoSt challenged sectors {picked:?} of a set of one"
        );
        let vanilla = post_vanilla(WINNING.0, &[&one], prover_id, r)?;
        let name = format!("winning-r{k}-0.vanilla");
        fs::write(out.join(&name), &vanilla[0])?;
        winning.push(vec![name]);
    }
    // WindowPoSt: partition 0, both sectors (a full 2KiB partition).
    let mut window = Vec::new();
    for (k, r) in rs.iter().enumerate() {
        let vanilla = post_vanilla(WINDOW.0, &[&one, &two], prover_id, r)?;
        let mut names = Vec::new();
        for (i, v) in vanilla.iter().enumerate() {
            let name = format!("window-r{k}-{i}.vanilla");
            fs::write(out.join(&name), v)?;
            names.push(name);
        }
        window.push(names);
    }
    // SnapDeals: new data encoded into sector 1 (the sector key), its partition proofs.
    let up = dir.join("update");
    let new_cache = up.join("cache");
    fs::create_dir_all(&new_cache)?;
    let new_replica = up.join("replica");
    File::create(&new_replica)?.set_len(fs::metadata(&one.replica)?.len())?;
    let size = filecoin_proofs::UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(
        filecoin_proofs::SECTOR_SIZE_2_KIB,
    ));
    let (staged, piece) = stage(&up, "new-data", &data(0x0bad_cafe_f00d, u64::from(size)))?;
    let encoded = update::empty_sector_update_encode_into(
        UPDATE.0,
        &new_replica,
        &new_cache,
        &one.replica,
        &one.cache,
        &staged,
        &[piece],
    )?;
    let partitions = update::generate_partition_proofs(
        UPDATE.0,
        one.comm_r,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &one.replica,
        &one.cache,
        &new_replica,
        &new_cache,
    )?;
    ensure!(
        update::verify_partition_proofs(
            UPDATE.0,
            &partitions,
            one.comm_r,
            encoded.comm_r_new,
            encoded.comm_d_new
        )?,
        "filecoin-proofs rejected the update's own partition proofs"
    );
    let mut snap = Vec::new();
    for (p, proof) in partitions.iter().enumerate() {
        let name = format!("snap-{p}.vanilla");
        fs::write(out.join(&name), &proof.0)?;
        snap.push(name);
    }

    let hexes = |rs: &[[u8; 32]]| rs.iter().map(|r| hex(r)).collect::<Vec<_>>();
    let manifest = Manifest {
        miner,
        sector_size: filecoin_proofs::SECTOR_SIZE_2_KIB,
        porep: PorepInputs {
            registered_proof: SEAL_NUMBER,
            sector,
            c1: c1_name.into(),
        },
        winning: PostInputs {
            registered_proof: WINNING.1,
            partition: 0,
            sectors: vec![sector],
            comm_r: vec![hex(&one.comm_r)],
            randomness: hexes(&rs),
            vanilla: winning,
        },
        window: PostInputs {
            registered_proof: WINDOW.1,
            partition: 0,
            sectors: vec![sector, sector + 1],
            comm_r: vec![hex(&one.comm_r), hex(&two.comm_r)],
            randomness: hexes(&rs),
            vanilla: window,
        },
        snap: SnapInputs {
            registered_proof: UPDATE.1,
            sector,
            comm_r_old: hex(&one.comm_r),
            comm_r_new: hex(&encoded.comm_r_new),
            comm_d_new: hex(&encoded.comm_d_new),
            vanilla: snap,
        },
    };
    let text = format!(
        "# Written by cuzk-bench soak-c1 make: the 2KiB Filecoin inputs of a soak.\n{}",
        toml::to_string(&manifest).context("encoding the manifest")?
    );
    fs::write(out.join(MANIFEST), text)?;
    fs::remove_dir_all(&dir)?;
    println!(
        "soak-c1: sealed two 2KiB sectors (miner {miner}, sectors {sector} and {}) in {:.1} s; C1 output ({} bytes), {n_randomness} WinningPoSt and WindowPoSt vanilla sets, {} SnapDeals partition proof(s) in {:.1} s, in {}",
        sector + 1,
        sealed_at.as_secs_f64(),
        json.len(),
        partitions.len(),
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(())
}

fn unhex(name: &str, s: &str) -> Result<[u8; 32]> {
    ensure!(
        s.len() == 64 && s.is_ascii(),
        "{name}: {s:?} is not 32 bytes of hex"
    );
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .with_context(|| format!("{name}: {s:?} is not hex"))?;
    }
    Ok(out)
}

/// What a proof file is of, from its name.
#[derive(Debug, PartialEq, Eq)]
enum Of {
    Porep,
    Winning(usize),
    Window(usize),
    Snap,
}

fn parse_name(path: &Path) -> Result<Of> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".bin"))
        .with_context(|| format!("{}: not a <kind>-<job>[-r<k>].bin file", path.display()))?;
    let parts: Vec<&str> = name.split('-').collect();
    let k = |p: &str| {
        p.strip_prefix('r')
            .and_then(|k| k.parse().ok())
            .with_context(|| format!("{}: no randomness index", path.display()))
    };
    Ok(match parts.as_slice() {
        ["porep", _] => Of::Porep,
        ["snap", _] => Of::Snap,
        ["winning", _, r] => Of::Winning(k(r)?),
        ["window", _, r] => Of::Window(k(r)?),
        _ => bail!("{}: not a proof file of the soak", path.display()),
    })
}

/// The public replicas of PoSt inputs.
fn replicas(
    inputs: &PostInputs,
    proof: RegisteredPoStProof,
) -> Result<BTreeMap<SectorId, PublicReplicaInfo>> {
    ensure!(
        inputs.sectors.len() == inputs.comm_r.len(),
        "as many comm_r as sectors"
    );
    inputs
        .sectors
        .iter()
        .zip(&inputs.comm_r)
        .map(|(&s, c)| {
            Ok((
                SectorId::from(s),
                PublicReplicaInfo::new(proof, unhex("comm_r", c)?),
            ))
        })
        .collect()
}

fn verify(params: &Path, dir: &Path, proofs: &[PathBuf]) -> Result<()> {
    // filecoin-proofs reads this once, on first use: before any of its calls.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", std::path::absolute(params)?);
    let path = dir.join(MANIFEST);
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let m: Manifest = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    let prover_id = prover_id_from_miner_id(m.miner);
    let json = fs::read(dir.join(&m.porep.c1)).context("reading the C1 output")?;
    let c1 = cuzk_filecoin::decode_c1(&json).context("decoding the C1 output")?;
    let winning = replicas(&m.winning, WINNING.0)?;
    let window = replicas(&m.window, WINDOW.0)?;
    let r = |inputs: &PostInputs, k: usize| -> Result<[u8; 32]> {
        let hex = inputs
            .randomness
            .get(k)
            .with_context(|| format!("no randomness {k} in {MANIFEST}"))?;
        unhex("randomness", hex)
    };
    let snap = (
        unhex("comm_r_old", &m.snap.comm_r_old)?,
        unhex("comm_r_new", &m.snap.comm_r_new)?,
        unhex("comm_d_new", &m.snap.comm_d_new)?,
    );
    // Per kind: (checked, rejected).
    let mut counts: BTreeMap<&str, (usize, Vec<String>)> = BTreeMap::new();
    for path in proofs {
        let proof = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let of = parse_name(path)?;
        let (kind, ok) = match of {
            Of::Porep => (
                "PoRep C2 (verify_seal)",
                api::verify_seal(
                    c1.registered_proof,
                    c1.comm_r,
                    c1.comm_d,
                    prover_id,
                    SectorId::from(m.porep.sector),
                    c1.ticket,
                    c1.seed,
                    &proof,
                ),
            ),
            Of::Winning(k) => (
                "WinningPoSt (verify_winning_post)",
                post::verify_winning_post(&r(&m.winning, k)?, &proof, &winning, prover_id),
            ),
            Of::Window(k) => (
                "WindowPoSt (verify_window_post)",
                post::merge_window_post_partition_proofs(
                    WINDOW.0,
                    vec![PartitionSnarkProof(proof)],
                )
                .and_then(|merged| {
                    post::verify_window_post(
                        &r(&m.window, k)?,
                        &[(WINDOW.0, &merged)],
                        &window,
                        prover_id,
                    )
                }),
            ),
            Of::Snap => (
                "SnapDeals (verify_empty_sector_update_proof)",
                update::verify_empty_sector_update_proof(UPDATE.0, &proof, snap.0, snap.1, snap.2),
            ),
        };
        // A proof that does not even decode is rejected like one that does not verify.
        let entry = counts.entry(kind).or_default();
        entry.0 += 1;
        match ok {
            Ok(true) => {}
            Ok(false) => entry.1.push(path.display().to_string()),
            Err(e) => entry.1.push(format!("{} ({e:#})", path.display())),
        }
    }
    ensure!(!proofs.is_empty(), "no proof files given");
    let summary: Vec<String> = counts
        .iter()
        .map(|(kind, (n, bad))| format!("{} of {n} {kind}", n - bad.len()))
        .collect();
    let rejected: Vec<String> = counts.values().flat_map(|(_, bad)| bad.clone()).collect();
    if !rejected.is_empty() {
        println!(
            "soak-c1: filecoin-proofs rejected {}; accepted {}",
            rejected.join(", "),
            summary.join(", ")
        );
        bail!("filecoin-proofs rejected {} proof(s)", rejected.len());
    }
    println!("soak-c1: filecoin-proofs accepted {}", summary.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_file_names_say_what_they_are() {
        let of = |n: &str| parse_name(Path::new(n));
        assert_eq!(of("out/porep-12.bin").unwrap(), Of::Porep);
        assert_eq!(of("snap-3.bin").unwrap(), Of::Snap);
        assert_eq!(of("winning-7-r2.bin").unwrap(), Of::Winning(2));
        assert_eq!(of("window-9-r15.bin").unwrap(), Of::Window(15));
        assert!(of("window-9.bin").is_err());
        assert!(of("sha-1.bin").is_err());
        assert!(of("porep-1.json").is_err());
    }

    #[test]
    fn randomness_is_distinct_and_canonical() {
        let rs: Vec<[u8; 32]> = (0..256).map(randomness).collect();
        for (i, r) in rs.iter().enumerate() {
            assert_eq!(r[31], 0);
            assert!(rs[..i].iter().all(|o| o[..8] != r[..8]));
        }
        assert_eq!(unhex("r", &hex(&rs[5])).unwrap(), rs[5]);
    }
}
