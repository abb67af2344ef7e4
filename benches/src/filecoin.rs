//! `cuzk-bench filecoin`: PoRep C2 of real sectors, cuzk on the GPU against filecoin-proofs'
//! own `seal_commit_phase2` (bellperson on the CPU) on the same machine, both checked by
//! `verify_seal`. Sectors are sealed here with filecoin-proofs (no network), parameters
//! generated on the GPU by cuzk's cache; everything lives under `--work-dir`.

use crate::logcap::SynthesisTimes;
use crate::stats::median;
use anyhow::{bail, ensure, Context, Result};
use cuzk_cuda::Device;
use cuzk_filecoin::{
    CachePolicy, CircuitId, DigestCheck, Generator, GpuBackend, ParamCache, Proved, Prover,
};
use cuzk_prover::GpuProverConfig;
use filecoin_proofs::{
    add_piece, generate_piece_commitment, seal_commit_phase1, seal_commit_phase2,
    seal_pre_commit_phase1, seal_pre_commit_phase2, verify_seal, MerkleTreeTrait, PoRepConfig,
    ProverId, SealCommitPhase1Output, SectorShape2KiB, SectorShape512MiB, SectorShape8MiB,
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_8_MIB,
};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use storage_proofs_core::api_version::ApiVersion;
use storage_proofs_core::sector::SectorId;

/// Options of `cuzk-bench filecoin`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder for everything: parameters (`params/`), filecoin-proofs' parent cache
    /// (`parents/`) and the sealed sectors (`sectors/`). A 512MiB sector needs about 8 GB.
    #[arg(long, default_value = "filecoin-work")]
    work_dir: PathBuf,
    /// Sector sizes: 2KiB, 8MiB, 512MiB.
    #[arg(long, value_delimiter = ',', default_value = "2KiB")]
    sizes: Vec<String>,
    /// Timed cuzk C2 runs after the first (which places the parameters on the device).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Timed filecoin-proofs C2 runs after the first (which reads the parameters).
    #[arg(long, default_value_t = 1)]
    cpu_runs: usize,
    /// Skip filecoin-proofs' C2 (its column then reads "-").
    #[arg(long)]
    skip_cpu: bool,
    /// Also time filecoin-proofs' own parameter generation for the PoRep circuit (bellperson's
    /// `generate_random_parameters` on the same blank circuit, what its parameter cache runs
    /// when a file is missing; CPU, slow).
    #[arg(long)]
    fp_paramgen: bool,
    /// Reuse parameters cuzk generated in an earlier run instead of generating them again
    /// (the generation column then reads "cached").
    #[arg(long)]
    keep_params: bool,
    /// Keep the sealed sector files after the size is done.
    #[arg(long)]
    keep_sectors: bool,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

/// filecoin-proofs' own tests use this PoRep id with API 1.2.0; ids that look like
/// production ones fail the parent-cache check.
const POREP_ID: [u8; 32] = [129; 32];
/// A prover id that is a canonical field element.
const PROVER_ID: ProverId = [7; 32];
const SEED: [u8; 32] = [5; 32];
const TICKET: [u8; 32] = [3; 32];
/// The goal for a 2KiB C2 on an H200.
const GOAL_2KIB_S: f64 = 1.0;

/// One row of the results.
struct Row {
    size: String,
    constraints: usize,
    partitions: usize,
    seal_s: f64,
    paramgen_s: Option<f64>,
    fp_paramgen_s: Option<f64>,
    circuit_load_s: f64,
    upload_s: f64,
    cuzk_first_s: f64,
    cuzk_s: f64,
    cuzk_synth_s: f64,
    cuzk_prove_s: f64,
    fp_first_s: Option<f64>,
    fp_s: Option<f64>,
    bp_synth_s: Option<f64>,
}

pub fn run(args: &Args) -> Result<()> {
    ensure!(args.runs >= 1, "--runs must be at least 1");
    fs::create_dir_all(&args.work_dir)
        .with_context(|| format!("creating {}", args.work_dir.display()))?;
    let work = std::path::absolute(&args.work_dir)?;
    let params = work.join("params");
    let parents = work.join("parents");
    fs::create_dir_all(&params)?;
    fs::create_dir_all(&parents)?;
    // filecoin-proofs reads these once, on first use: before any of its calls.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
    ensure!(
        std::path::absolute(ParamCache::filecoin_dir())? == params,
        "filecoin-proofs' parameter folder is not {}",
        params.display()
    );
    init_tracing();
    let log = SynthesisTimes::install();

    let sizes = args
        .sizes
        .iter()
        .map(|s| parse_sector_size(s))
        .collect::<Result<Vec<_>>>()?;
    let largest = sizes.iter().copied().max().unwrap_or(SECTOR_SIZE_2_KIB);
    let device = Device::open(args.device).context("opening the CUDA device")?;
    eprintln!("filecoin: device {} {:?}", args.device, device.info());
    let cache = ParamCache::with_policy(
        &params,
        CachePolicy {
            generate_up_to: largest,
            generator: Generator::Gpu {
                device: args.device,
            },
            digests: DigestCheck::Verify,
            pce_on_disk: true,
        },
    );
    let backend = GpuBackend::new(&device, GpuProverConfig::default())?;

    let mut rows = Vec::new();
    for size in sizes {
        let row = match size {
            SECTOR_SIZE_2_KIB => {
                one_size::<SectorShape2KiB>(size, args, &work, &cache, &backend, log)
            }
            SECTOR_SIZE_8_MIB => {
                one_size::<SectorShape8MiB>(size, args, &work, &cache, &backend, log)
            }
            SECTOR_SIZE_512_MIB => {
                one_size::<SectorShape512MiB>(size, args, &work, &cache, &backend, log)
            }
            other => bail!("no shape for {other} byte sectors"),
        }
        .with_context(|| format!("{} sector", size_name(size)))?;
        rows.push(row);
        print_table(&rows);
    }
    println!();
    println!("## PoRep C2: cuzk (GPU) vs filecoin-proofs (bellperson, CPU)");
    println!();
    print_table(&rows);
    for r in rows.iter().filter(|r| r.size == "2KiB") {
        let verdict = if r.cuzk_s <= GOAL_2KIB_S {
            "met"
        } else {
            "missed"
        };
        println!(
            "goal: 2KiB C2 <= {GOAL_2KIB_S} s on the GPU: {verdict} ({:.3} s)",
            r.cuzk_s
        );
    }
    Ok(())
}

fn print_table(rows: &[Row]) {
    println!(
        "| sector | partitions | constraints | cuzk GPU C2 s | filecoin-proofs CPU C2 s | speedup | cuzk GPU paramgen s | filecoin-proofs CPU paramgen s | cuzk C2 first s | fp C2 first s | cuzk synthesis s | bellperson synthesis s | cuzk prove s | circuit load s | params upload s | seal (PC1+PC2+C1) s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.3}"));
    for r in rows {
        let speedup = r
            .fp_s
            .map_or_else(|| "-".to_string(), |fp| format!("{:.1}x", fp / r.cuzk_s));
        println!(
            "| {} | {} | {} | {:.3} | {} | {} | {} | {} | {:.3} | {} | {:.3} | {} | {:.3} | {:.3} | {:.3} | {:.1} |",
            r.size,
            r.partitions,
            r.constraints,
            r.cuzk_s,
            opt(r.fp_s),
            speedup,
            r.paramgen_s
                .map_or_else(|| "cached".to_string(), |v| format!("{v:.3}")),
            opt(r.fp_paramgen_s),
            r.cuzk_first_s,
            opt(r.fp_first_s),
            r.cuzk_synth_s,
            opt(r.bp_synth_s),
            r.cuzk_prove_s,
            r.circuit_load_s,
            r.upload_s,
            r.seal_s,
        );
    }
}

/// Seals a sector of `size` bytes (the shape `Tree`) and times its C2 both ways.
fn one_size<Tree: 'static + MerkleTreeTrait>(
    size: u64,
    args: &Args,
    work: &Path,
    cache: &ParamCache,
    backend: &GpuBackend,
    log: &SynthesisTimes,
) -> Result<Row> {
    let config = PoRepConfig::new_groth16(size, POREP_ID, ApiVersion::V1_2_0);
    let name = size_name(size);
    let partitions = usize::from(config.partitions);
    let sector_id = SectorId::from(1000 + size.trailing_zeros() as u64);

    // Seal with filecoin-proofs.
    let sector_dir = work.join("sectors").join(&name);
    if sector_dir.exists() {
        fs::remove_dir_all(&sector_dir)?;
    }
    fs::create_dir_all(&sector_dir)?;
    let t = Instant::now();
    let (c1, comm_r, comm_d) = seal::<Tree>(&config, &sector_dir, sector_id)?;
    let seal_s = t.elapsed().as_secs_f64();
    eprintln!("{name}: sealed (PC1, PC2, C1) in {seal_s:.1} s");
    let c1_json = serde_json::to_vec(&c1).context("encoding the C1 output")?;
    drop(c1);
    let decode = || -> Result<SealCommitPhase1Output<Tree>> {
        serde_json::from_slice(&c1_json).context("decoding the C1 output")
    };
    let verify = |proof: &[u8]| -> Result<bool> {
        verify_seal::<Tree>(
            &config, comm_r, comm_d, PROVER_ID, sector_id, TICKET, SEED, proof,
        )
    };

    // Parameters: generated on the GPU into filecoin-proofs' folder (unless kept).
    let id = CircuitId::porep::<Tree>(&config)?;
    if !args.keep_params {
        remove_generated(cache.dir(), &id)?;
    }
    let t = Instant::now();
    let keys = cache.load_porep::<Tree>(&config)?;
    let load_s = t.elapsed().as_secs_f64();
    let paramgen_s = keys.generate_time.map(|d| d.as_secs_f64());
    eprintln!(
        "{name}: circuit loaded in {load_s:.1} s ({} constraints; GPU parameter generation {})",
        keys.pce.num_constraints,
        paramgen_s.map_or_else(
            || "skipped, parameters cached".into(),
            |s| format!("{s:.1} s")
        )
    );
    let t = Instant::now();
    let resident = backend.load(&keys.params)?;
    let upload_s = t.elapsed().as_secs_f64();
    eprintln!("{name}: parameters on the device in {upload_s:.1} s (resident: {resident})");

    // cuzk on the GPU: a first run, then the timed ones.
    let prover = Prover::new(cache, backend);
    let c2 = |run: &str| -> Result<Proved> {
        let proved =
            prover.seal_commit_phase2_v1(&config, decode()?, PROVER_ID, u64::from(sector_id))?;
        ensure!(
            verify(&proved.proof)?,
            "verify_seal rejected cuzk's proof ({run})"
        );
        eprintln!(
            "{name}: cuzk C2 {run}: {:.3} s (synthesis {:.3} s, prove {:.3} s, self-check {:.3} s; GPU phases of partition 0: {:?})",
            proved.timings.total.as_secs_f64(),
            proved.timings.synthesis.as_secs_f64(),
            proved.timings.prove.as_secs_f64(),
            proved.timings.verify.as_secs_f64(),
            backend
                .last_timings()
                .first()
                .map(|t| t.phases())
                .unwrap_or_default()
        );
        Ok(proved)
    };
    let first = c2("first")?;
    let mut total = Vec::new();
    let mut synth = Vec::new();
    let mut prove = Vec::new();
    for run in 0..args.runs {
        let proved = c2(&format!("run {}", run + 1))?;
        total.push(proved.timings.total);
        synth.push(proved.timings.synthesis);
        prove.push(proved.timings.prove);
    }

    // filecoin-proofs' own C2: bellperson on the CPU, the same parameters.
    let (mut fp_first_s, mut fp_s, mut bp_synth_s) = (None, None, None);
    if !args.skip_cpu {
        log.take();
        let fp = |run: &str| -> Result<Duration> {
            let t = Instant::now();
            let out = seal_commit_phase2::<Tree>(&config, decode()?, PROVER_ID, sector_id)?;
            let took = t.elapsed();
            ensure!(
                verify(&out.proof)?,
                "verify_seal rejected filecoin-proofs' proof ({run})"
            );
            eprintln!(
                "{name}: filecoin-proofs C2 {run}: {:.3} s",
                took.as_secs_f64()
            );
            Ok(took)
        };
        fp_first_s = Some(fp("first")?.as_secs_f64());
        let runs = (0..args.cpu_runs)
            .map(|run| fp(&format!("run {}", run + 1)))
            .collect::<Result<Vec<_>>>()?;
        let synth_times = log.take();
        if !runs.is_empty() {
            fp_s = Some(median(&runs).as_secs_f64());
        } else {
            fp_s = fp_first_s;
        }
        // bellperson logs one synthesis time per batch of partitions.
        if !synth_times.is_empty() {
            bp_synth_s = Some(median(&synth_times).as_secs_f64());
        }
    }

    let fp_paramgen_s = if args.fp_paramgen {
        let t = Instant::now();
        let params = fp_generate::<Tree>(&config)?;
        let took = t.elapsed().as_secs_f64();
        eprintln!(
            "{name}: filecoin-proofs' parameter generation (bellperson, CPU): {took:.1} s ({} H points)",
            params.h.len()
        );
        Some(took)
    } else {
        None
    };

    if !args.keep_sectors {
        fs::remove_dir_all(&sector_dir)?;
    }
    Ok(Row {
        size: name,
        constraints: keys.pce.num_constraints,
        partitions,
        seal_s,
        paramgen_s,
        fp_paramgen_s,
        circuit_load_s: (keys.load_time.as_secs_f64() - paramgen_s.unwrap_or(0.0)).max(0.0),
        upload_s,
        cuzk_first_s: first.timings.total.as_secs_f64(),
        cuzk_s: median(&total).as_secs_f64(),
        cuzk_synth_s: median(&synth).as_secs_f64(),
        cuzk_prove_s: median(&prove).as_secs_f64(),
        fp_first_s,
        fp_s,
        bp_synth_s,
    })
}

/// filecoin-proofs' parameter generation for the PoRep circuit of `config`: what its parameter
/// cache runs when a file is missing (bellperson's `generate_random_parameters` on the blank
/// circuit of the public parameters `seal_commit_phase2` sets up), without writing the file.
fn fp_generate<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
) -> Result<bellperson::groth16::Parameters<blstrs::Bls12>> {
    use storage_proofs_core::compound_proof::{CompoundProof, SetupParams};
    use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
    let setup = SetupParams {
        vanilla_params: filecoin_proofs::parameters::setup_params(config)?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    let pub_params =
        <StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, filecoin_proofs::DefaultPieceHasher>,
            _,
        >>::setup(&setup)?;
    let blank = <StackedCompound<Tree, filecoin_proofs::DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, filecoin_proofs::DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pub_params.vanilla_params);
    let mut rng = rand::rngs::OsRng;
    Ok(bellperson::groth16::generate_random_parameters::<
        blstrs::Bls12,
        _,
        _,
    >(blank, &mut rng)?)
}

/// Pre-commits and commits (phase 1) one sector of deterministic data in `dir`; returns the
/// C1 output, comm_r and comm_d.
fn seal<Tree: 'static + MerkleTreeTrait>(
    config: &PoRepConfig,
    dir: &Path,
    sector_id: SectorId,
) -> Result<(SealCommitPhase1Output<Tree>, [u8; 32], [u8; 32])> {
    let unpadded = config.unpadded_bytes_amount();
    let piece = dir.join("piece");
    write_piece(&piece, u64::from(unpadded))?;
    let info = generate_piece_commitment(File::open(&piece)?, unpadded)?;
    let staged = dir.join("staged");
    let mut out = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    add_piece(File::open(&piece)?, &mut out, unpadded, &[])?;
    out.rewind()?;
    drop(out);
    fs::remove_file(&piece)?;
    let cache_dir = dir.join("cache");
    fs::create_dir_all(&cache_dir)?;
    let replica = dir.join("sealed");
    File::create(&replica)?;
    let pieces = vec![info];
    let t = Instant::now();
    let p1 = seal_pre_commit_phase1::<_, _, _, Tree>(
        config, &cache_dir, &staged, &replica, PROVER_ID, sector_id, TICKET, &pieces,
    )?;
    eprintln!("  PC1 {:.1} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let pre_commit = seal_pre_commit_phase2(config, p1, &cache_dir, &replica)?;
    eprintln!("  PC2 {:.1} s", t.elapsed().as_secs_f64());
    fs::remove_file(&staged)?;
    let (comm_r, comm_d) = (pre_commit.comm_r, pre_commit.comm_d);
    let t = Instant::now();
    let c1 = seal_commit_phase1::<_, Tree>(
        config, &cache_dir, &replica, PROVER_ID, sector_id, TICKET, SEED, pre_commit, &pieces,
    )?;
    eprintln!("  C1 {:.1} s", t.elapsed().as_secs_f64());
    Ok((c1, comm_r, comm_d))
}

/// `len` bytes of deterministic, varied piece data.
fn write_piece(path: &Path, len: u64) -> Result<()> {
    let mut w = BufWriter::with_capacity(8 << 20, File::create(path)?);
    let mut chunk = vec![0u8; 1 << 20];
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut left = len;
    while left > 0 {
        for b in chunk.iter_mut() {
            // xorshift64: cheap bytes that are not all alike.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        let n = left.min(chunk.len() as u64) as usize;
        w.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    w.flush()?;
    Ok(())
}

/// Removes the parameter files cuzk generated for `id` (never a ceremony's: only files with
/// cuzk's generation record), so that they are generated, and timed, again.
fn remove_generated(dir: &Path, id: &CircuitId) -> Result<()> {
    if !dir.join(id.generation_record_file()).exists() {
        return Ok(());
    }
    for name in [
        id.params_file(),
        id.vk_file(),
        id.meta_file(),
        id.generation_record_file(),
    ] {
        let path = dir.join(name);
        if path.exists() {
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

fn parse_sector_size(s: &str) -> Result<u64> {
    Ok(match s.trim().to_ascii_lowercase().as_str() {
        "2kib" | "2048" => SECTOR_SIZE_2_KIB,
        "8mib" => SECTOR_SIZE_8_MIB,
        "512mib" => SECTOR_SIZE_512_MIB,
        other => bail!("sector size {other:?}: use 2KiB, 8MiB or 512MiB"),
    })
}

fn size_name(size: u64) -> String {
    match size {
        SECTOR_SIZE_2_KIB => "2KiB".into(),
        SECTOR_SIZE_8_MIB => "8MiB".into(),
        SECTOR_SIZE_512_MIB => "512MiB".into(),
        other => format!("{other}B"),
    }
}

/// cuzk's own progress (parameter generation, PCE recording, placement) on stderr.
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new("warn,cuzk_filecoin=info,cuzk_groth16=info")
    });
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .finish();
    // Only this subcommand installs one; `log` records (bellperson's) go to the capture.
    let _ = tracing::subscriber::set_global_default(subscriber);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sector_sizes_parse() {
        assert_eq!(parse_sector_size("2KiB").unwrap(), 2048);
        assert_eq!(parse_sector_size("512MiB").unwrap(), 512 << 20);
        assert!(parse_sector_size("32GiB").is_err());
        assert_eq!(size_name(8 << 20), "8MiB");
    }
}
