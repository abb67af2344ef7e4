//! The Groth16 prover of cuzk on a CUDA device, over the CPU reference of `cuzk-groth16`
//! (whose checks, proof assembly and generator scalars it uses, so that both give the same
//! proof for the same randomness):
//!
//! - [`DeviceParameters`] place a parameter set on a device, resident in VRAM or streamed
//!   from pinned host memory ([`Residency`]).
//! - [`GpuProver`] proves one witness ([`GpuProver::prove`]) or a batch, with the H step
//!   (iNTT, coset NTT, (a·b − c)/Z, coset iNTT) and the five MSMs on the device;
//!   [`PreparedWitness`] is the CPU half of a proof, made while the device proves another.
//! - [`DevicePce`] is a circuit's PCE placed on a device ([`GpuProver::place_pce`]): with it
//!   (and resident parameters) a proof uploads only the witness and evaluates, checks and
//!   gathers a, b, c and the MSM scalars on the device ([`GpuProver::prepare_with`]).
//! - [`generate_parameters_gpu`] and its variants make parameters with the fixed-base
//!   multiplications on the device, equal to the CPU generator's for the same toxic waste.
//!
//! - [`Prover`] is the one-call form for any bellpepper circuit:
//!   `Prover::new().create_random_proof(circuit, params, &mut rng)` records and caches the
//!   circuit, places its parameters once, draws r and s, verifies the proof before returning
//!   it, and proves on the CPU when there is no GPU. `params` is a parameter file, cuzk's
//!   [`cuzk_groth16::Parameters`] or, with the `bellperson` feature, bellperson's
//!   `Parameters<Bls12>` (and then the proof is bellperson's too).
//!
//! Errors are [`Error`]: the reference's checks ([`Error::Groth16`]) or the device's.
#![forbid(unsafe_code)]

mod device_pce;
mod error;
mod one_call;
mod pack;
mod paramgen;
mod params;
mod prep;
mod prover;
mod stage;

pub use device_pce::{device_eval_bytes, DevicePce};
pub use error::{Error, Result};
#[cfg(feature = "bellperson")]
pub use one_call::to_bellperson;
pub use one_call::{Circuit, ParameterSource, Prover};
pub use paramgen::{
    generate_parameters_gpu, generate_parameters_gpu_config, generate_parameters_gpu_random,
    DeviceQueries, GpuGenerated, GpuParamgenConfig,
};
pub use params::{resident_query_bytes, DeviceParameters, Residency};
pub use prep::{witness_buffer_bytes, PreparedWitness};
pub use prover::{msm_work_bytes, GpuProver, GpuProverConfig, HCopies, ProofTimings, Warmed};
