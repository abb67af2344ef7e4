//! BLS12-381 types for cuzk: the blstrs field and curve types, their `#[repr(C)]`
//! limb layouts shared with the CUDA kernels, and the constants NTT and kernels need.
//!
//! Every element crosses to the GPU as little-endian `u64` Montgomery limbs, exactly as
//! blst stores it, so a kernel may read the same bytes as little-endian `u32` limbs.
//! The affine identity is all-zero coordinates, as in blst.
#![forbid(unsafe_code)]

mod bitmap;
pub mod consts;
mod repr;

pub use bitmap::Bitmap;
pub use repr::{Fp2Repr, FpRepr, FrRepr, G1AffineRepr, G2AffineRepr, ReprError};

pub use blstrs::{
    Bls12, Fp, Fp12, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Gt, Scalar,
};
pub use ff::{Field, PrimeField};
pub use group::{prime::PrimeCurveAffine, Curve, Group};
pub use pairing::{Engine, MultiMillerLoop};

/// The scalar field Fr of BLS12-381 (an alias that reads better next to `Fp`).
pub type Fr = Scalar;
