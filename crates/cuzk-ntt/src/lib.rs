//! Number-theoretic transforms over the BLS12-381 scalar field Fr, on bellperson's domains
//! (root of unity from `cuzk_field::consts::root_of_unity`, coset generator 7), natural order
//! in and out.
//!
//! - [`cpu`]: the reference: radix-2 transforms ([`cpu::Domain`]: `ntt`, `intt`, `coset_ntt`,
//!   `coset_intt`, `h_quotient`), a naive DFT and polynomial evaluation; always built and free
//!   of `unsafe`.
//! - [`plan`]: how the GPU engine cuts a transform into kernel passes and which twiddle tables
//!   it needs; plain Rust, always built, and tested against the reference through a model of the
//!   kernels that follows them line for line.
//! - `gpu` (feature `cuda`, on by default): `gpu::NttEngine`, in-place transforms of device
//!   vectors of `FrRepr` (2^1 … 2^28 elements, several per call) queued on a caller's stream,
//!   with twiddle tables built once per size and kept on the device, and the fused Groth16 H
//!   step `groth16_h`.
//!
//! # Kernel design (kernels/ntt)
//!
//! A transform of 2^L elements runs in one to three passes of at most ten radix-2 stages each
//! (three passes of nine at 2^27), so data crosses device memory three times. A pass block
//! holds whole lines of the pass in registers and shared memory: each thread keeps eight
//! elements and runs radix-8 (or 4, 2) butterflies on them, and the rounds between exchanges
//! through shared memory follow the four-step split, so twiddles come from one small table per
//! pass plus one *pass factor* per element. Shared memory holds one 32-bit plane per limb with a
//! swizzle that keeps every round's accesses free of bank conflicts (tested in [`plan`]).
//! Strided passes put neighbouring lines in one block so global accesses come in runs. Blocks
//! are persistent: as many as fit on the device (from the occupancy API) loop over the line
//! groups. Forward transforms are bit reversal + decimation in time; inverse ones decimation in
//! frequency + bit reversal; scalings (1/n, coset powers, 1/Z) ride on the first or last pass.
//! The Fr product (kernels/field/fr_arith.cuh) uses r ≡ 1 mod 2^32 to save a sixth of the 32-bit
//! products and splits its work between the integer multiply pipe and the ALU; inside a pass the
//! values stay below 2r (no conditional subtraction after a product) and each pass stores them
//! reduced.
#![deny(unsafe_code)] // Opted out, with reasons, only by the module that launches kernels.

pub mod cpu;
mod error;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod plan;

pub use error::NttError;
