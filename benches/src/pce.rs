//! `cuzk-bench pce`: records the PCE of Filecoin's PoRep circuit at each sector size (the
//! first-use cost of a circuit, before any parameters), reporting its shape, its size in
//! memory and on disk, the recording's wall time and the process's peak RSS; with
//! `--work-dir`, the file is saved in a parameter cache there and loaded back, timed, which
//! also prepares that cache for a later run (the daemon finds the PCE instead of recording
//! it). CPU only.

use crate::stats::rss_peak_gib;
use anyhow::{Context, Result};
use cuzk_bench::fabricate::{Api, Porep, Size, Target};
use cuzk_filecoin::{CachePolicy, ParamCache};
use cuzk_synth::Pce;
use std::path::PathBuf;
use std::time::Instant;

/// Options of `cuzk-bench pce`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sector sizes: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB (a 32GiB PCE holds 8.3 GiB).
    #[arg(long, value_delimiter = ',', default_value = "2KiB")]
    sizes: Vec<Size>,
    /// PoRep API version (1.0, 1.1 or 1.2); the circuit is the same for all three at a size.
    #[arg(long, default_value = "1.1")]
    api: Api,
    /// Parameter cache to save each PCE in (as `v28-…-<circuit>.cuzk-pce`) and load it back
    /// from; an existing file there is loaded, not recorded again. Without it, nothing is
    /// written.
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// One size's results.
struct Row {
    size: Size,
    pce: PceShape,
    /// Recorded (or, when the file was already there, loaded) in this many seconds.
    first_s: f64,
    recorded: bool,
    /// The file's bytes and a fresh load of it, when saved.
    file: Option<(u64, f64)>,
    rss_gib: f64,
}

struct PceShape {
    constraints: usize,
    inputs: usize,
    aux: usize,
    nnz: [usize; 3],
    heap_gib: f64,
}

impl PceShape {
    fn of(pce: &Pce) -> PceShape {
        let nnz = [pce.a.nnz(), pce.b.nnz(), pce.c.nnz()];
        PceShape {
            constraints: pce.num_constraints,
            inputs: pce.num_inputs,
            aux: pce.num_aux,
            nnz,
            heap_gib: pce.heap_bytes() as f64 / GIB,
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

pub fn run(args: &Args) -> Result<()> {
    println!(
        "pce: {} threads; PoRep circuit, API {:?}",
        rayon::current_num_threads(),
        args.api
    );
    let mut rows = Vec::new();
    for &size in &args.sizes {
        let config = Target::new(size, args.api, Porep::Interactive).config();
        rows.push(one_size(size, &config, args.work_dir.as_ref())?);
        print_row(rows.last().expect("pushed"));
    }
    println!();
    println!("| sector | constraints | inputs | aux | nnz A / B / C | in memory GiB | first s | how | file GiB | load s | peak RSS GiB |");
    println!("|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|");
    for r in &rows {
        let (file, load) = r.file.map_or(("-".into(), "-".into()), |(bytes, s)| {
            (format!("{:.2}", bytes as f64 / GIB), format!("{s:.2}"))
        });
        println!(
            "| {} | {} | {} | {} | {} / {} / {} | {:.2} | {:.2} | {} | {file} | {load} | {:.2} |",
            r.size,
            r.pce.constraints,
            r.pce.inputs,
            r.pce.aux,
            r.pce.nnz[0],
            r.pce.nnz[1],
            r.pce.nnz[2],
            r.pce.heap_gib,
            r.first_s,
            if r.recorded { "recorded" } else { "loaded" },
            r.rss_gib,
        );
    }
    println!("(peak RSS is the process's so far: sizes run in the order given)");
    Ok(())
}

fn print_row(r: &Row) {
    println!(
        "pce: {}: {} constraints, {} inputs, {} aux; {} in {:.2} s; peak RSS {:.2} GiB",
        r.size,
        r.pce.constraints,
        r.pce.inputs,
        r.pce.aux,
        if r.recorded { "recorded" } else { "loaded" },
        r.first_s,
        r.rss_gib
    );
}

fn one_size(
    size: Size,
    config: &filecoin_proofs::PoRepConfig,
    work_dir: Option<&PathBuf>,
) -> Result<Row> {
    let policy = CachePolicy {
        pce_on_disk: work_dir.is_some(),
        ..CachePolicy::default()
    };
    // Without a work folder nothing is read or written, so any folder will do.
    let dir = work_dir.cloned().unwrap_or_else(std::env::temp_dir);
    if let Some(dir) = work_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let cache = ParamCache::with_policy(&dir, policy);
    let id = cuzk_filecoin::CircuitId::porep_of(config)?;
    let path = dir.join(id.pce_file());
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let before = work_dir.and(modified(&path));
    let start = Instant::now();
    let (_, pce) = cache
        .porep_pce(config)
        .with_context(|| format!("the {size} PoRep circuit's PCE"))?;
    let first_s = start.elapsed().as_secs_f64();
    let shape = PceShape::of(&pce);
    drop(pce);
    // Loaded when a file was there and the cache left it as it was (an unusable one is
    // recorded again and rewritten).
    let recorded = before.is_none() || modified(&path) != before;
    let file = match work_dir {
        Some(_) if path.exists() => {
            let bytes = std::fs::metadata(&path)?.len();
            // The file itself, timed (the cache would record again, quietly, if it were
            // unusable), and checked against what was recorded.
            let start = Instant::now();
            let loaded = Pce::load(&path, None)
                .with_context(|| format!("loading {} back", path.display()))?;
            let load_s = start.elapsed().as_secs_f64();
            let back = PceShape::of(&loaded);
            anyhow::ensure!(
                (back.constraints, back.inputs, back.aux, back.nnz)
                    == (shape.constraints, shape.inputs, shape.aux, shape.nnz),
                "{} does not hold the PCE just made",
                path.display()
            );
            Some((bytes, load_s))
        }
        _ => None,
    };
    Ok(Row {
        size,
        pce: shape,
        first_s,
        recorded,
        file,
        rss_gib: rss_peak_gib(),
    })
}
