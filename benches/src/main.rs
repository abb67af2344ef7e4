//! `cuzk-bench`: cuzk's benchmark binary. `cpu` compares cuzk's CPU prover with bellperson's;
//! `fabricate-c1` writes a consistent PoRep C1 output without a sealed sector.

mod cpu;
mod fabricate_c1;
#[cfg(feature = "cuda")]
mod filecoin;
#[cfg(feature = "cuda")]
mod gpu_msm;
#[cfg(feature = "cuda")]
mod gpu_ntt;
#[cfg(feature = "cuda")]
mod gpu_prove;
#[cfg(feature = "cuda")]
mod gpu_scale;
mod host;
mod logcap;
mod paramgen;
mod pce;
#[cfg(feature = "cuda")]
mod soak_c1;
mod stats;
mod verify_c2;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "cuzk-bench", about = "cuzk benchmarks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// cuzk's CPU prover and PCE synthesis vs bellperson's, same circuit and parameters.
    Cpu(cpu::Args),
    /// Parameter generation, cuzk vs bellperson, same circuit.
    Paramgen(paramgen::Args),
    /// The host side of GPU proofs alone: synthesis and checked evaluation, several workers.
    Host(host::Args),
    /// A consistent PoRep C1 output for a sector that was never sealed (a C2 benchmark and test
    /// input): filecoin-proofs-api JSON or Curio's envelope, self-checked before it is written.
    FabricateC1(fabricate_c1::Args),
    /// The PCE of Filecoin's PoRep circuit per sector size: shape, memory, recording time and
    /// peak RSS; saved in and loaded back from a parameter cache with --work-dir.
    Pce(pce::Args),
    /// filecoin-proofs' verify_seal of a PoRep C2 proof against the C1 output it was proved from.
    VerifyC2(verify_c2::Args),
    /// GPU NTT engine vs sppark's figures (feature `cuda`).
    #[cfg(feature = "cuda")]
    Ntt(gpu_ntt::Args),
    /// GPU MSM engine (G1, G2, sparse) vs sppark's figures (feature `cuda`).
    #[cfg(feature = "cuda")]
    Msm(gpu_msm::Args),
    /// GPU prover on PoRep-shaped partitions: time per partition, phases, idle share (feature `cuda`).
    #[cfg(feature = "cuda")]
    Prove(gpu_prove::Args),
    /// The GPU side alone on one and several GPUs: replayed prepared witnesses (feature `cuda`).
    #[cfg(feature = "cuda")]
    Scale(gpu_scale::Args),
    /// Filecoin PoRep C2 of sealed sectors: cuzk on the GPU vs filecoin-proofs on the CPU (feature `cuda`).
    #[cfg(feature = "cuda")]
    Filecoin(filecoin::Args),
    /// The 2KiB Filecoin inputs of the bundle's run-soak (PoRep C1, PoSt and SnapDeals vanilla proofs), and filecoin-proofs' verification of its proofs (feature `cuda`).
    #[cfg(feature = "cuda")]
    SoakC1(soak_c1::Args),
}

fn main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Cpu(args) => cpu::run(&args),
        Cmd::Paramgen(args) => paramgen::run(&args),
        Cmd::Host(args) => host::run(&args),
        Cmd::FabricateC1(args) => fabricate_c1::run(&args),
        Cmd::Pce(args) => pce::run(&args),
        Cmd::VerifyC2(args) => verify_c2::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::Ntt(args) => gpu_ntt::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::Msm(args) => gpu_msm::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::Prove(args) => gpu_prove::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::Scale(args) => gpu_scale::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::Filecoin(args) => filecoin::run(&args),
        #[cfg(feature = "cuda")]
        Cmd::SoakC1(args) => soak_c1::run(&args),
    }
}
