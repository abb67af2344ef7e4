//! The two groups an MSM runs in, G1 and G2, behind one trait: their blstrs types, the byte
//! layouts the kernels read and write, and the conversions between them.

use crate::xyzz::Xyzz;
use bytemuck::{Pod, Zeroable};
use cuzk_field::{
    Fp, Fp2, Fp2Repr, FpRepr, G1Affine, G1AffineRepr, G1Projective, G2Affine, G2AffineRepr,
    G2Projective, PrimeCurveAffine, ReprError, Scalar,
};
use ff::Field;
use group::prime::PrimeCurve;
use group::{Curve as _, Group as _};
use std::fmt::Debug;
use std::ops::AddAssign;

mod sealed {
    /// Only G1 and G2 of BLS12-381: the kernels exist for those two alone.
    pub trait Sealed {}
}

/// A group the MSM runs in: [`G1`] or [`G2`] of BLS12-381.
pub trait MsmCurve: sealed::Sealed + Copy + Debug + Send + Sync + 'static {
    /// Short lower-case name, as in kernel names (`g1`, `g2`).
    const NAME: &'static str;
    /// The coordinate field (Fp for G1, Fp2 for G2).
    type Base: Field;
    /// blstrs affine points.
    type Affine: PrimeCurveAffine<Scalar = Scalar, Curve = Self::Projective> + Send + Sync;
    /// blstrs projective points.
    type Projective: PrimeCurve<Scalar = Scalar, Affine = Self::Affine>
        + for<'a> AddAssign<&'a Self::Affine>
        + Send
        + Sync;
    /// The affine layout the kernels read (blst's, identity all zeros).
    type AffineRepr: Pod + Default + Debug + PartialEq + Send + Sync;
    /// The XYZZ layout the kernels write: X, Y, ZZ, ZZZ in Montgomery form.
    type XyzzRepr: Pod + Debug + Send + Sync;

    /// The affine layout of a point.
    fn to_repr(p: &Self::Affine) -> Self::AffineRepr;
    /// A point from its layout, checking the coordinates and the curve equation.
    fn from_repr(r: &Self::AffineRepr) -> Result<Self::Affine, ReprError>;
    /// A point from affine coordinates, checking the curve equation.
    fn from_coords(x: Self::Base, y: Self::Base) -> Result<Self::Affine, ReprError>;
    /// The affine coordinates of a point, `None` for the identity.
    fn coords(p: &Self::Affine) -> Option<(Self::Base, Self::Base)>;
    /// Σ scalars[i]·bases[i] on the CPU ([`crate::cpu::msm`], lengths checked there).
    fn cpu_msm(bases: &[Self::Affine], scalars: &[Scalar]) -> Self::Projective;
    /// Decodes the four XYZZ coordinates of a point written by the kernels.
    fn xyzz_from_repr(r: &Self::XyzzRepr) -> Result<Xyzz<Self::Base>, ReprError>;

    /// Converts an XYZZ point back to a group element, checking that it is on the curve.
    fn from_xyzz(p: &Xyzz<Self::Base>) -> Result<Self::Projective, ReprError> {
        match p.to_affine() {
            None => Ok(Self::Projective::identity()),
            Some((x, y)) => Ok(Self::from_coords(x, y)?.to_curve()),
        }
    }

    /// Affine form of many projective points with one inversion.
    fn batch_to_affine(points: &[Self::Projective]) -> Vec<Self::Affine> {
        let mut out = vec![Self::Affine::identity(); points.len()];
        Self::Projective::batch_normalize(points, &mut out);
        out
    }
}

/// BLS12-381 G1: coordinates in Fp, 96-byte affine points.
#[derive(Clone, Copy, Debug)]
pub enum G1 {}

/// BLS12-381 G2: coordinates in Fp2, 192-byte affine points.
#[derive(Clone, Copy, Debug)]
pub enum G2 {}

impl sealed::Sealed for G1 {}
impl sealed::Sealed for G2 {}

/// An XYZZ point of G1 as the kernels store it (192 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct G1XyzzRepr {
    /// X = x·ZZ.
    pub x: FpRepr,
    /// Y = y·ZZZ.
    pub y: FpRepr,
    /// ZZ; zero at infinity.
    pub zz: FpRepr,
    /// ZZZ, with ZZ³ = ZZZ²; zero at infinity.
    pub zzz: FpRepr,
}

/// An XYZZ point of G2 as the kernels store it (384 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct G2XyzzRepr {
    /// X = x·ZZ.
    pub x: Fp2Repr,
    /// Y = y·ZZZ.
    pub y: Fp2Repr,
    /// ZZ; zero at infinity.
    pub zz: Fp2Repr,
    /// ZZZ, with ZZ³ = ZZZ²; zero at infinity.
    pub zzz: Fp2Repr,
}

impl MsmCurve for G1 {
    const NAME: &'static str = "g1";
    type Base = Fp;
    type Affine = G1Affine;
    type Projective = G1Projective;
    type AffineRepr = G1AffineRepr;
    type XyzzRepr = G1XyzzRepr;

    fn to_repr(p: &G1Affine) -> G1AffineRepr {
        G1AffineRepr::from(p)
    }
    fn from_repr(r: &G1AffineRepr) -> Result<G1Affine, ReprError> {
        G1Affine::try_from(*r)
    }
    fn from_coords(x: Fp, y: Fp) -> Result<G1Affine, ReprError> {
        G1Affine::try_from(G1AffineRepr {
            x: x.into(),
            y: y.into(),
        })
    }
    fn cpu_msm(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
        crate::cpu::msm_g1_affine(bases, scalars)
    }

    fn coords(p: &G1Affine) -> Option<(Fp, Fp)> {
        (!bool::from(p.is_identity())).then(|| (p.x(), p.y()))
    }
    fn xyzz_from_repr(r: &G1XyzzRepr) -> Result<Xyzz<Fp>, ReprError> {
        Ok(Xyzz {
            x: r.x.try_into()?,
            y: r.y.try_into()?,
            zz: r.zz.try_into()?,
            zzz: r.zzz.try_into()?,
        })
    }
}

impl MsmCurve for G2 {
    const NAME: &'static str = "g2";
    type Base = Fp2;
    type Affine = G2Affine;
    type Projective = G2Projective;
    type AffineRepr = G2AffineRepr;
    type XyzzRepr = G2XyzzRepr;

    fn to_repr(p: &G2Affine) -> G2AffineRepr {
        G2AffineRepr::from(p)
    }
    fn from_repr(r: &G2AffineRepr) -> Result<G2Affine, ReprError> {
        G2Affine::try_from(*r)
    }
    fn from_coords(x: Fp2, y: Fp2) -> Result<G2Affine, ReprError> {
        G2Affine::try_from(G2AffineRepr {
            x: x.into(),
            y: y.into(),
        })
    }
    fn cpu_msm(bases: &[G2Affine], scalars: &[Scalar]) -> G2Projective {
        crate::cpu::msm_g2_affine(bases, scalars)
    }

    fn coords(p: &G2Affine) -> Option<(Fp2, Fp2)> {
        (!bool::from(p.is_identity())).then(|| (p.x(), p.y()))
    }
    fn xyzz_from_repr(r: &G2XyzzRepr) -> Result<Xyzz<Fp2>, ReprError> {
        Ok(Xyzz {
            x: r.x.try_into()?,
            y: r.y.try_into()?,
            zz: r.zz.try_into()?,
            zzz: r.zzz.try_into()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Group;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn round_trip<C: MsmCurve>() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let p = C::Projective::random(&mut rng);
        let a = p.to_affine();
        assert_eq!(C::from_repr(&C::to_repr(&a)).unwrap(), a);
        let id = C::to_repr(&C::Affine::identity());
        assert_eq!(
            bytemuck::bytes_of(&id),
            vec![0u8; std::mem::size_of_val(&id)]
        );
        assert_eq!(
            C::from_xyzz(&Xyzz::infinity()).unwrap(),
            C::Projective::identity()
        );
    }

    #[test]
    fn layouts_round_trip_and_have_kernel_sizes() {
        round_trip::<G1>();
        round_trip::<G2>();
        assert_eq!(std::mem::size_of::<G1XyzzRepr>(), 192);
        assert_eq!(std::mem::size_of::<G2XyzzRepr>(), 384);
    }
}
