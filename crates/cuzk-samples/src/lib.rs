//! The sample circuit kinds a cuzk scheduler registers by default (`Registry::with_builtins`):
//! [`Sha256Kind`] (`sha256`: knowledge of a SHA-256 preimage, the request's bytes) and
//! [`SyntheticPoRepKind`] (`synthetic-porep`: PoRep-shaped circuits of 2^10 to 2^27
//! constraints from a seed, for benchmarks at Filecoin's sizes). They implement
//! `cuzk-plugin`'s `CircuitKind` like any other kind.
#![forbid(unsafe_code)]

mod sha256;
mod synthetic;

pub use sha256::Sha256Kind;
pub use synthetic::SyntheticPoRepKind;
