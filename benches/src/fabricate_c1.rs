//! `cuzk-bench fabricate-c1`: writes a consistent PoRep C1 output for a sector that was never
//! sealed (`cuzk_bench::fabricate`), a C2 benchmark and test input. It prints the seed it used,
//! so that a run can be repeated with `--seed`.

use anyhow::{Context, Result};
use cuzk_bench::fabricate::{fabricate, Api, Format, Porep, Size, Spec, Target};
use cuzk_filecoin::ids::hex;
use std::path::PathBuf;

/// Options of `cuzk-bench fabricate-c1`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sector size: 2KiB, 8MiB, 512MiB, 32GiB or 64GiB.
    #[arg(long)]
    size: Size,
    /// PoRep API version: 1.0 and 1.1 (filecoin-proofs-api's registered proofs V1, V1_1), or
    /// 1.2 (filecoin-proofs' own configuration with a test porep id; JSON only).
    #[arg(long, default_value = "1.1")]
    api: Api,
    /// interactive (the only one that can be fabricated), synthetic or non-interactive.
    #[arg(long, default_value = "interactive")]
    porep: Porep,
    /// Where to write the output.
    #[arg(long)]
    out: PathBuf,
    /// json (filecoin-proofs-api's C1 JSON) or wrapper (lotus-bench's and Curio's envelope).
    #[arg(long, default_value = "json")]
    format: Format,
    /// Seeds every random choice; a random one when not given (printed either way).
    #[arg(long)]
    seed: Option<u64>,
    /// The miner actor id (the prover id is derived from it).
    #[arg(long, default_value_t = cuzk_bench::fabricate::DEFAULT_MINER)]
    miner: u64,
    /// The sector number.
    #[arg(long, default_value_t = 1)]
    sector: u64,
}

pub fn run(args: &Args) -> Result<()> {
    let seed = args.seed.unwrap_or_else(rand::random);
    println!("fabricate-c1: seed {seed} (repeat with --seed {seed})");
    let spec = Spec {
        target: Target::new(args.size, args.api, args.porep),
        miner: args.miner,
        sector: args.sector,
        seed,
    };
    anyhow::ensure!(
        args.format == Format::Json || spec.target.registered_proof().is_some(),
        "API {:?} has no registered proof, so no envelope: use --format json",
        args.api
    );
    let made =
        fabricate(&spec).with_context(|| format!("fabricating a {} C1 output", args.size))?;
    let bytes = made.encode(args.format)?;
    std::fs::write(&args.out, &bytes).with_context(|| format!("writing {}", args.out.display()))?;
    let (partitions, challenges) = made.c1.shape();
    let public = made.c1.public();
    println!(
        "fabricate-c1: {} sector, API {:?} ({}), miner {} sector {}: {partitions} partitions x {challenges} challenges; comm_r {} comm_d {}",
        made.size,
        args.api,
        spec.target
            .registered_proof()
            .map_or_else(|| format!("porep id {}", hex(&made.config.porep_id)), |r| format!("{r:?}")),
        args.miner,
        args.sector,
        hex(&public.comm_r),
        hex(&public.comm_d),
    );
    println!(
        "fabricate-c1: generated in {:.3} s, self-checked in {:.3} s; wrote {} bytes ({:?}) to {}",
        made.timings.generate.as_secs_f64(),
        made.timings.check.as_secs_f64(),
        bytes.len(),
        args.format,
        args.out.display()
    );
    Ok(())
}
