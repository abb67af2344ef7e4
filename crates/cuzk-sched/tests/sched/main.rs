//! The scheduler's behaviour end to end on the CPU backend with small circuits: one test
//! binary, so the crate's tests build and link once.

mod boundary;
mod common;
mod control;
mod isolation;
mod ordering;
mod overload;
mod proofs;
mod routing;
