//! Native witness generation: the aux values a bellpepper gadget allocates, computed directly.
//!
//! A generic circuit computes its witness by running its gadgets into a witness-only
//! constraint system, one `Boolean` and one call into the system per bit. This crate computes the
//! same assignments on machine words: [`sha256`] and [`sha256_block_no_padding`] append to an
//! aux vector exactly the values bellpepper 0.2's gadgets of the same names allocate, in
//! their order, and return the digest in the form the gadget returns it (which bits are
//! constants, which are allocated, and where). `docs/native-witness.md` writes down the
//! allocation order this follows.
//!
//! [`create_label`] does the same for storage-proofs-porep's PoRep label circuit (its hash
//! and the packed label).
//!
//! [`porep_partition_witness`] makes a whole PoRep partition's witness (storage-proofs-porep's
//! `StackedCircuit`) with those and a native Poseidon: all but a few values computed natively.
//! [`post_partition_witness`] makes a whole PoSt partition's (storage-proofs-post's
//! `FallbackPoStCircuit`, WinningPoSt's and WindowPoSt's), all of it natively, and
//! [`snap_partition_witness`] a SnapDeals partition's (storage-proofs-update's
//! `EmptySectorUpdateCircuit`), all of it natively too.
//!
//! The generators append to a [`Sink`]: a growing `Vec`, or a packed assignment
//! ([`cuzk_synth::PackedAux`]: zeros and ones as bits), which is how a PoRep partition's
//! challenges write their sections, in parallel, and how its witness comes back.
//!
//! Input bits are [`Bit`]s: a constant, or a variable allocated elsewhere (by the caller's
//! circuit, never here) with its value, possibly negated as `Boolean::Not`.
#![forbid(unsafe_code)]

mod bit;
mod error;
mod label;
mod porep;
mod post;
mod sha256;
mod sink;
mod snap;
mod word;
#[cfg(test)]
mod word_tests;

pub use bit::Bit;
pub use error::{NativeError, PorepError};
pub use label::{create_label, LABEL_PARENTS};
pub use porep::{porep_partition_witness, PorepProof, PorepPublicInputs};
pub use post::{post_partition_witness, PostError, PostProof, PostPublicInputs};
pub use sha256::{sha256, sha256_block_no_padding, Digest};
pub use sink::Sink;
pub use snap::{snap_partition_witness, SnapError, SnapProof};
