//! Groth16 over BLS12-381 for cuzk: bellperson-format parameters, a parameter generator,
//! the CPU reference prover and the verifier.
//!
//! - [`Parameters`] / [`VerifyingKey`] read and write bellperson's parameter files;
//!   [`PreparedParameters`] holds the queries in blst's layout for proving.
//! - [`generate_parameters`] makes parameters for a recorded circuit ([`cuzk_synth::Pce`]).
//! - [`prove`] (PCE path), [`prove_synthesized`] (reference path) and the circuit-level
//!   conveniences produce [`Proof`]s equal to bellperson's for the same randomness.
//! - [`verify_proof`] and [`verify_proofs_batch`] check them.
//! - [`parts`] are the pieces a prover or generator running elsewhere (the GPU prover of
//!   `cuzk-prover`) composes, so that it checks, assembles and generates exactly as the CPU
//!   reference does.
//!
//! A math crate: no unsafe, no GPU code.
#![forbid(unsafe_code)]

mod error;
mod field;
mod fixed_base;
mod generator;
mod params;
#[cfg(test)]
mod pipeline_tests;
mod proof;
mod prover;
mod qap;
#[cfg(test)]
mod test_circuit;
mod verifier;

pub use error::{Error, PointError, Result, Section};
pub use generator::{
    generate_parameters, generate_parameters_with, generate_parameters_with_timings,
    generate_random_parameters, ParamgenTimings, ToxicWaste,
};
pub use params::{Parameters, PreparedParameters, VerifyingKey};
pub use proof::Proof;
pub use prover::{
    create_proof, create_random_proof, create_random_proof_with_pce, prove, prove_batch,
    prove_synthesized,
};
/// Pieces of the prover and the generator for provers and generators running elsewhere: the
/// checks every proof passes before expensive work, the assembly of a proof from its five
/// MSM results, and the scalars every parameter point multiplies a generator by.
pub mod parts {
    pub use crate::generator::GeneratorScalars;
    pub use crate::prover::{assemble, check_delta, check_queries, check_witness, Shape, Sums};
}

pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
};
