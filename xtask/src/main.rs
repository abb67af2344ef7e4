//! cuzk's automation, run as `cargo xtask <command>`: tests, e2e, benchmarks, kernels, bundle.

mod balancer;
mod bundle;
mod e2e;
mod gpu_test;
mod kernels;
mod nvcc;
mod util;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "cargo xtask", about = "cuzk project automation")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Format check, clippy with -D warnings, and the workspace tests (CPU only);
    /// with --gpu, instead only the ignored `gpu_` tests, on this machine's GPU.
    Test {
        /// Run exactly the workspace's ignored `gpu_` tests; fails without a GPU or if none ran.
        #[arg(long)]
        gpu: bool,
        /// With --gpu: architectures of the kernel image to build first (default: all).
        #[arg(long, value_delimiter = ',', requires = "gpu")]
        arch: Vec<String>,
    },
    /// Start cuzk-daemon, prove the sample circuits over gRPC, verify every proof
    /// independently, print a timing table, and stop the daemon with SIGTERM.
    E2e,
    /// Two CPU daemons behind nginx (the configuration docs/operations.md documents), a
    /// stream of Prove calls, one daemon SIGKILLed mid-run: every call verified or a clear
    /// error, each answered once.
    Balancer(balancer::BalancerArgs),
    /// Run a CPU benchmark suite: `cpu` (prover and synthesis vs bellperson) or `paramgen`
    /// (parameter generation vs bellperson).
    Bench {
        /// Which suite to run.
        #[arg(value_parser = ["cpu", "paramgen"])]
        suite: String,
        /// Extra arguments passed to the benchmark binary.
        #[arg(trailing_var_arg = true)]
        args: Vec<String>,
    },
    /// Compile kernels/ (with the generated field code) into target/kernels/cuzk.fatbin.
    BuildKernels(kernels::BuildKernelsArgs),
    /// Build target/bundle/: release GPU test binaries, cuzk-bench, cuzk-daemon, cuzk, the kernel image, run scripts.
    Bundle(bundle::BundleArgs),
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Test { gpu: false, .. } => test(),
        Cmd::Test { gpu: true, arch } => gpu_test::run(&arch),
        Cmd::E2e => e2e::run(),
        Cmd::Balancer(args) => balancer::run(&args),
        Cmd::Bench { suite, args } => {
            let mut argv = vec!["run", "--release", "--package", "cuzk-bench", "--", &suite];
            argv.extend(args.iter().map(String::as_str));
            util::cargo(&argv, &[])
        }
        Cmd::BuildKernels(args) => kernels::build(&args).map(drop),
        Cmd::Bundle(args) => bundle::build(&args).map(drop),
    }
}

fn test() -> Result<()> {
    util::step("format check");
    util::cargo(&["fmt", "--all", "--check"], &[])?;
    util::step("clippy");
    util::cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    // The code behind features a default build leaves out (the GPU benchmarks and tests of
    // `cuda`, `bellperson`): compiled and linted here too, though nothing of it runs.
    util::step("clippy, every feature");
    util::cargo(
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    util::step("workspace tests (CPU)");
    util::cargo(&["test", "--workspace"], &[])
}
