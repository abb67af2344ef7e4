//! Circuit synthesis for cuzk: bellpepper-core 0.2 constraint systems over BLS12-381's Fr.
//!
//! Two paths produce what a Groth16 prover needs (assignments, the a/b/c evaluations and
//! the density bitmaps of the A and B queries):
//! - the reference path, [`synthesize_full`], evaluates every linear combination as the
//!   circuit runs, as bellperson's proving assignment does;
//! - the PCE path records the circuit's A/B/C once into CSR matrices ([`Pce::record`]),
//!   then per proof runs the circuit on a witness-only constraint system
//!   ([`synthesize_witness`]) and multiplies ([`Pce::evaluate`]).
//!
//! Rows are the circuit's constraints in order, followed by one input-consistency row per
//! public input (A = that input, B = C = 0), exactly as Groth16 (bellperson) appends them.
//! Columns are variables: inputs first (input 0 is the constant ONE), then aux.
//!
//! A variable is in the A (resp. B) query iff it has a nonzero coefficient in some row of A
//! (resp. B): a parameter file's query point for a variable is the sum of its coefficients
//! times Lagrange values, which vanishes exactly then, so both paths' densities line up
//! with the filtered queries of a parameter file.
//!
//! [`check_satisfied`] names the first constraint a circuit's assignment breaks.
//!
//! The extensible systems follow bellperson's contract for sub-circuits synthesized apart
//! and merged in order: `ConstraintSystem::new()` is empty, the sub-circuit allocates its own
//! ONE ("temp ONE") as its first input, and `extend` drops that input, its column being the
//! receiver's ONE. The entry points above start their root system with ONE themselves.
#![forbid(unsafe_code)]

mod check;
mod error;
mod full;
mod lc;
mod packed;
mod paired;
mod pce;
mod record;
#[cfg(feature = "testing")]
pub mod testing;
mod types;
mod witness;

pub use check::check_satisfied;
pub use cuzk_field::Bitmap;
pub use error::SynthError;
pub use full::FullCs;
pub use packed::PackedAux;
pub use pce::{Csr, Pce, PceHeader, MAX_KEY_LEN, PCE_FORMAT_VERSION, PCE_MAGIC};
pub use types::{Density, Evaluations, FullSynthesis, Witness};
pub use witness::WitnessCs;

use bellpepper_core::Circuit;
use cuzk_field::Scalar;

/// Runs the circuit on the reference constraint system (bellperson's proving assignment).
pub fn synthesize_full<C: Circuit<Scalar>>(circuit: C) -> Result<FullSynthesis, SynthError> {
    let mut cs = FullCs::with_one();
    circuit.synthesize(&mut cs)?;
    cs.finish()
}

/// Runs the circuit on the witness-only constraint system: assignments, no constraints.
pub fn synthesize_witness<C: Circuit<Scalar>>(circuit: C) -> Result<Witness, SynthError> {
    let mut cs = WitnessCs::with_one();
    circuit.synthesize(&mut cs)?;
    Ok(cs.into_witness())
}
