//! `#[repr(C)]` limb layouts of field elements and affine points, shared byte for byte with
//! the CUDA kernels, and lossless conversions to and from the blstrs types.

use crate::consts::{FP_MODULUS, FR_MODULUS};
use crate::{Fp, Fp2, G1Affine, G2Affine, Scalar};
use bytemuck::{Pod, Zeroable};

/// Why raw limbs could not become a field element or curve point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReprError {
    /// Montgomery limbs of Fr must be below the modulus r.
    #[error("Fr limbs {0:016x?} are not below the modulus")]
    FrNotReduced([u64; 4]),
    /// Montgomery limbs of Fp must be below the modulus p.
    #[error("Fp limbs {0:016x?} are not below the modulus")]
    FpNotReduced([u64; 6]),
    /// The coordinates do not satisfy the curve equation (and are not the all-zero identity).
    #[error("{0} affine point is not on the curve")]
    NotOnCurve(&'static str),
}

/// An Fr element: four little-endian `u64` Montgomery limbs (32 bytes), as blst's `blst_fr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct FrRepr {
    /// Little-endian Montgomery limbs.
    pub limbs: [u64; 4],
}

/// An Fp element: six little-endian `u64` Montgomery limbs (48 bytes), as blst's `blst_fp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct FpRepr {
    /// Little-endian Montgomery limbs.
    pub limbs: [u64; 6],
}

/// An Fp2 element `c0 + c1·u` (96 bytes), as blst's `blst_fp2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct Fp2Repr {
    /// Real part.
    pub c0: FpRepr,
    /// Coefficient of u.
    pub c1: FpRepr,
}

/// A G1 affine point (96 bytes), as blst's `blst_p1_affine`; the identity is all zeros.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct G1AffineRepr {
    /// x coordinate.
    pub x: FpRepr,
    /// y coordinate.
    pub y: FpRepr,
}

/// A G2 affine point (192 bytes), as blst's `blst_p2_affine`; the identity is all zeros.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Pod, Zeroable)]
pub struct G2AffineRepr {
    /// x coordinate.
    pub x: Fp2Repr,
    /// y coordinate.
    pub y: Fp2Repr,
}

fn below<const N: usize>(a: &[u64; N], m: &[u64; N]) -> bool {
    for j in (0..N).rev() {
        if a[j] != m[j] {
            return a[j] < m[j];
        }
    }
    false
}

impl From<Scalar> for FrRepr {
    fn from(s: Scalar) -> Self {
        FrRepr {
            limbs: blst::blst_fr::from(s).l,
        }
    }
}

impl TryFrom<FrRepr> for Scalar {
    type Error = ReprError;
    fn try_from(r: FrRepr) -> Result<Self, ReprError> {
        if !below(&r.limbs, &FR_MODULUS) {
            return Err(ReprError::FrNotReduced(r.limbs));
        }
        Ok(Scalar::from(blst::blst_fr { l: r.limbs }))
    }
}

impl From<Fp> for FpRepr {
    fn from(f: Fp) -> Self {
        FpRepr {
            limbs: blst::blst_fp::from(f).l,
        }
    }
}

impl TryFrom<FpRepr> for Fp {
    type Error = ReprError;
    fn try_from(r: FpRepr) -> Result<Self, ReprError> {
        if !below(&r.limbs, &FP_MODULUS) {
            return Err(ReprError::FpNotReduced(r.limbs));
        }
        Ok(Fp::from(blst::blst_fp { l: r.limbs }))
    }
}

impl From<Fp2> for Fp2Repr {
    fn from(f: Fp2) -> Self {
        Fp2Repr {
            c0: f.c0().into(),
            c1: f.c1().into(),
        }
    }
}

impl TryFrom<Fp2Repr> for Fp2 {
    type Error = ReprError;
    fn try_from(r: Fp2Repr) -> Result<Self, ReprError> {
        Ok(Fp2::new(r.c0.try_into()?, r.c1.try_into()?))
    }
}

impl From<G1Affine> for G1AffineRepr {
    fn from(p: G1Affine) -> Self {
        G1AffineRepr {
            x: p.x().into(),
            y: p.y().into(),
        }
    }
}

impl From<&G1Affine> for G1AffineRepr {
    fn from(p: &G1Affine) -> Self {
        (*p).into()
    }
}

impl TryFrom<G1AffineRepr> for G1Affine {
    type Error = ReprError;
    /// Checks reduction and the curve equation (not the subgroup; see `is_torsion_free`).
    fn try_from(r: G1AffineRepr) -> Result<Self, ReprError> {
        let p = G1Affine::from_raw_unchecked(r.x.try_into()?, r.y.try_into()?, false);
        if bool::from(p.is_on_curve()) {
            Ok(p)
        } else {
            Err(ReprError::NotOnCurve("G1"))
        }
    }
}

impl From<G2Affine> for G2AffineRepr {
    fn from(p: G2Affine) -> Self {
        G2AffineRepr {
            x: p.x().into(),
            y: p.y().into(),
        }
    }
}

impl From<&G2Affine> for G2AffineRepr {
    fn from(p: &G2Affine) -> Self {
        (*p).into()
    }
}

impl TryFrom<G2AffineRepr> for G2Affine {
    type Error = ReprError;
    /// Checks reduction and the curve equation (not the subgroup; see `is_torsion_free`).
    fn try_from(r: G2AffineRepr) -> Result<Self, ReprError> {
        let p = G2Affine::from_raw_unchecked(r.x.try_into()?, r.y.try_into()?, false);
        if bool::from(p.is_on_curve()) {
            Ok(p)
        } else {
            Err(ReprError::NotOnCurve("G2"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{G1Projective, G2Projective};
    use ff::Field;
    use group::{prime::PrimeCurveAffine, Curve, Group};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn rng(seed: u64) -> ChaCha20Rng {
        ChaCha20Rng::seed_from_u64(seed)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn fr_round_trip(seed in any::<u64>()) {
            let s = Scalar::random(rng(seed));
            let r = FrRepr::from(s);
            prop_assert_eq!(Scalar::try_from(r).unwrap(), s);
            // The bytes a kernel sees as u32 limbs are the u64 limbs split low half first.
            let words: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&r));
            prop_assert_eq!(words[0] as u64 | (words[1] as u64) << 32, r.limbs[0]);
        }

        #[test]
        fn fp_and_fp2_round_trip(seed in any::<u64>()) {
            let mut g = rng(seed);
            let a = Fp::random(&mut g);
            prop_assert_eq!(Fp::try_from(FpRepr::from(a)).unwrap(), a);
            let b = Fp2::random(&mut g);
            prop_assert_eq!(Fp2::try_from(Fp2Repr::from(b)).unwrap(), b);
        }

        #[test]
        fn g1_round_trip(seed in any::<u64>()) {
            let p = G1Projective::random(rng(seed)).to_affine();
            prop_assert_eq!(G1Affine::try_from(G1AffineRepr::from(p)).unwrap(), p);
        }

        #[test]
        fn g2_round_trip(seed in any::<u64>()) {
            let p = G2Projective::random(rng(seed)).to_affine();
            prop_assert_eq!(G2Affine::try_from(G2AffineRepr::from(p)).unwrap(), p);
        }
    }

    #[test]
    fn identity_is_all_zero() {
        assert_eq!(
            G1AffineRepr::from(G1Affine::identity()),
            G1AffineRepr::zeroed()
        );
        assert_eq!(
            G2AffineRepr::from(G2Affine::identity()),
            G2AffineRepr::zeroed()
        );
        assert!(bool::from(
            G1Affine::try_from(G1AffineRepr::zeroed())
                .unwrap()
                .is_identity()
        ));
        assert!(bool::from(
            G2Affine::try_from(G2AffineRepr::zeroed())
                .unwrap()
                .is_identity()
        ));
    }

    #[test]
    fn layouts_have_kernel_sizes() {
        assert_eq!(std::mem::size_of::<FrRepr>(), 32);
        assert_eq!(std::mem::size_of::<FpRepr>(), 48);
        assert_eq!(std::mem::size_of::<Fp2Repr>(), 96);
        assert_eq!(std::mem::size_of::<G1AffineRepr>(), 96);
        assert_eq!(std::mem::size_of::<G2AffineRepr>(), 192);
    }

    #[test]
    fn edge_values_round_trip() {
        for s in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE] {
            assert_eq!(Scalar::try_from(FrRepr::from(s)).unwrap(), s);
        }
        for f in [Fp::ZERO, Fp::ONE, -Fp::ONE] {
            assert_eq!(Fp::try_from(FpRepr::from(f)).unwrap(), f);
        }
    }

    #[test]
    fn bad_limbs_are_rejected() {
        let err = Scalar::try_from(FrRepr { limbs: FR_MODULUS }).unwrap_err();
        assert_eq!(err, ReprError::FrNotReduced(FR_MODULUS));
        assert!(matches!(
            Fp::try_from(FpRepr {
                limbs: [u64::MAX; 6]
            }),
            Err(ReprError::FpNotReduced(_))
        ));
        let mut p = G1AffineRepr::from(G1Projective::generator().to_affine());
        p.y = FpRepr::from(Fp::ONE);
        assert_eq!(
            G1Affine::try_from(p).unwrap_err(),
            ReprError::NotOnCurve("G1")
        );
    }
}
