//! Groth16 on a CUDA device: parameter generation with fixed-base multiplication on the GPU,
//! and the GPU prover (H on the device, five MSMs against resident parameters).

mod paramgen;
mod params;
mod prep;
mod prover;
mod stage;

pub use paramgen::{
    generate_parameters_gpu, generate_parameters_gpu_config, generate_parameters_gpu_random,
    DeviceQueries, GpuGenerated, GpuParamgenConfig,
};
pub use params::{DeviceParameters, Residency};
pub use prep::PreparedWitness;
pub use prover::{GpuProver, GpuProverConfig, ProofTimings};
