//! Multi-scalar multiplication Σ sᵢ·Pᵢ over BLS12-381 G1 and G2.
//!
//! - [`cpu`]: the reference, a plain Pippenger over blstrs points; always built.
//! - [`digits`]: the signed-digit window decomposition the GPU uses, mirrored on the host.
//! - [`plan`]: how an MSM is cut to fit a VRAM allowance (window width, passes, chunks).
//! - [`batch`]: how a batch of MSMs against the same bases uses the allowance.
//! - [`streamed`]: how an MSM against bases in host memory is cut into chunks of bases.
//! - [`testing`]: seeded inputs (scalars, cheap valid bases, witness-shaped sparse scalars).
//! - `gpu` (feature `cuda`, on by default): the CUDA engine: bases uploaded once and kept on
//!   the device, scalars streamed from pinned memory, sorted-bucket Pippenger with XYZZ
//!   buckets, and the 0/1 split for witness-like scalars; batches of scalar sets against the
//!   same bases, pipelined; and bases kept in page-locked host memory, streamed in chunks.
//!
//! ```
//! use cuzk_msm::{cpu, testing, G1};
//! let bases = testing::random_bases::<G1>(100, 1);
//! let scalars = testing::random_scalars(100, 2);
//! let sum = cpu::msm::<G1>(&bases, &scalars).unwrap();
//! assert_eq!(sum, cpu::naive::<G1>(&bases, &scalars).unwrap());
//! ```
#![deny(unsafe_code)] // Opted out, with reasons, only by the module that launches kernels.

pub mod batch;
pub mod cpu;
mod curve;
pub mod digits;
mod error;
#[cfg(feature = "cuda")]
pub mod gpu;
#[cfg(test)]
mod model;
pub mod plan;
pub mod streamed;
pub mod testing;
mod xyzz;

pub use curve::{G1XyzzRepr, G2XyzzRepr, MsmCurve, G1, G2};
pub use error::MsmError;
pub use xyzz::Xyzz;
