//! Sample circuits for cuzk tests, benchmarks and end-to-end runs: a SHA-256 preimage
//! circuit built from bellpepper's gadgets, and a synthetic circuit shaped like Filecoin's
//! PoRep (mostly boolean witness, sparse B) that scales to any constraint count.
#![forbid(unsafe_code)]

mod count;
mod sha256;
mod synthetic;

pub use sha256::Sha256Preimage;
pub use synthetic::SyntheticPoRep;
