//! XYZZ point arithmetic on the host, formula for formula the kernels' (kernels/curve/xyzz.cuh):
//! the host decodes the kernels' results with it, and the tests check the formulas against
//! blstrs' group law on every special case before they run on a GPU.

use ff::Field;

/// A point (X / ZZ, Y / ZZZ) with ZZ³ = ZZZ²; ZZ = ZZZ = 0 is the point at infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Xyzz<F> {
    /// X = x·ZZ.
    pub x: F,
    /// Y = y·ZZZ.
    pub y: F,
    /// ZZ.
    pub zz: F,
    /// ZZZ.
    pub zzz: F,
}

impl<F: Field> Xyzz<F> {
    /// The point at infinity (all coordinates zero, as a cleared device buffer holds it).
    pub fn infinity() -> Self {
        Xyzz {
            x: F::ZERO,
            y: F::ZERO,
            zz: F::ZERO,
            zzz: F::ZERO,
        }
    }

    /// Whether this is the point at infinity.
    pub fn is_infinity(&self) -> bool {
        bool::from(self.zz.is_zero())
    }

    /// The affine point (x, y), or `None` at infinity.
    pub fn to_affine(&self) -> Option<(F, F)> {
        if self.is_infinity() {
            return None;
        }
        let w = Option::<F>::from(self.zzz.invert())?;
        // 1 / ZZ = ZZ² / ZZZ², since ZZ³ = ZZZ².
        let t = (self.zz * w).square();
        Some((self.x * t, self.y * w))
    }

    /// (x, y) as an XYZZ point.
    pub fn from_affine(x: F, y: F) -> Self {
        Xyzz {
            x,
            y,
            zz: F::ONE,
            zzz: F::ONE,
        }
    }
}

// The formulas below exist on the host only to be checked against blstrs; the kernels carry
// the same text.
#[cfg(test)]
impl<F: Field> Xyzz<F> {
    fn dbl_affine(x: F, y: F) -> Self {
        let u = y.double();
        let v = u.square();
        let w = u * v;
        let s = x * v;
        let x2 = x.square();
        let m = x2.double() + x2;
        let x3 = m.square() - s - s;
        Xyzz {
            y: m * (s - x3) - w * y,
            x: x3,
            zz: v,
            zzz: w,
        }
    }

    pub(crate) fn dbl(&mut self) {
        if self.is_infinity() {
            return;
        }
        let u = self.y.double();
        let v = u.square();
        let w = u * v;
        let s = self.x * v;
        let x2 = self.x.square();
        let m = x2.double() + x2;
        let x3 = m.square() - s - s;
        self.y = m * (s - x3) - w * self.y;
        self.x = x3;
        self.zz *= v;
        self.zzz *= w;
    }

    pub(crate) fn add_mixed(&mut self, x: F, y: F) {
        if self.is_infinity() {
            *self = Self::from_affine(x, y);
            return;
        }
        let u2 = x * self.zz;
        let s2 = y * self.zzz;
        let p = u2 - self.x;
        let r = s2 - self.y;
        if bool::from(p.is_zero()) {
            *self = if bool::from(r.is_zero()) {
                Self::dbl_affine(x, y)
            } else {
                Self::infinity()
            };
            return;
        }
        let pp = p.square();
        let ppp = p * pp;
        let q = self.x * pp;
        let x3 = r.square() - ppp - q.double();
        self.y = r * (q - x3) - self.y * ppp;
        self.x = x3;
        self.zz *= pp;
        self.zzz *= ppp;
    }

    pub(crate) fn add(&mut self, b: &Self) {
        if b.is_infinity() {
            return;
        }
        if self.is_infinity() {
            *self = *b;
            return;
        }
        let u1 = self.x * b.zz;
        let u2 = b.x * self.zz;
        let s1 = self.y * b.zzz;
        let s2 = b.y * self.zzz;
        let p = u2 - u1;
        let r = s2 - s1;
        if bool::from(p.is_zero()) {
            if bool::from(r.is_zero()) {
                self.dbl();
            } else {
                *self = Self::infinity();
            }
            return;
        }
        let pp = p.square();
        let ppp = p * pp;
        let q = u1 * pp;
        let x3 = r.square() - ppp - q.double();
        self.y = r * (q - x3) - s1 * ppp;
        self.x = x3;
        self.zz = self.zz * b.zz * pp;
        self.zzz = self.zzz * b.zzz * ppp;
    }

    pub(crate) fn mul_small(&self, k: u32) -> Self {
        if k == 0 || self.is_infinity() {
            return Self::infinity();
        }
        let mut out = *self;
        for bit in (0..31 - k.leading_zeros()).rev() {
            out.dbl();
            if (k >> bit) & 1 == 1 {
                out.add(self);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{MsmCurve, G1, G2};
    use cuzk_field::Scalar;
    use group::{Curve, Group};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    fn coords<C: MsmCurve>(p: &C::Projective) -> (C::Base, C::Base) {
        C::coords(&p.to_affine()).expect("random points are not the identity")
    }

    fn to_point<C: MsmCurve>(p: &Xyzz<C::Base>) -> C::Projective {
        C::from_xyzz(p).unwrap()
    }

    fn formulas_match_blstrs<C: MsmCurve>(seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let a = C::Projective::random(&mut rng);
        let b = C::Projective::random(&mut rng);
        let (ax, ay) = coords::<C>(&a);
        let (bx, by) = coords::<C>(&b);

        // A scaled representative of a: the formulas must not assume ZZ = 1.
        let z = C::Base::random(&mut rng);
        let scaled = |x: C::Base, y: C::Base| Xyzz {
            x: x * z.square(),
            y: y * z.square() * z,
            zz: z.square(),
            zzz: z.square() * z,
        };
        let xa = scaled(ax, ay);
        assert_eq!(to_point::<C>(&xa), a);

        let mut s = xa;
        s.add_mixed(bx, by);
        assert_eq!(to_point::<C>(&s), a + b, "mixed add");
        let mut s = xa;
        s.add_mixed(ax, ay);
        assert_eq!(to_point::<C>(&s), a.double(), "mixed add of itself doubles");
        let mut s = xa;
        s.add_mixed(ax, -ay);
        assert!(s.is_infinity(), "mixed add of the negation");
        let mut s = Xyzz::infinity();
        s.add_mixed(bx, by);
        assert_eq!(to_point::<C>(&s), b, "mixed add onto infinity");

        let xb = Xyzz::from_affine(bx, by);
        let mut s = xa;
        s.add(&xb);
        assert_eq!(to_point::<C>(&s), a + b, "full add");
        let mut s = xa;
        s.add(&Xyzz::from_affine(ax, ay));
        assert_eq!(to_point::<C>(&s), a.double(), "full add of itself doubles");
        let mut s = xa;
        s.add(&Xyzz::from_affine(ax, -ay));
        assert!(s.is_infinity(), "full add of the negation");
        let mut s = xa;
        s.add(&Xyzz::infinity());
        assert_eq!(to_point::<C>(&s), a, "adding infinity");

        let mut s = xa;
        s.dbl();
        assert_eq!(to_point::<C>(&s), a.double(), "double");
        let k: u32 = rng.gen();
        assert_eq!(
            to_point::<C>(&xa.mul_small(k)),
            a * Scalar::from(k as u64),
            "small multiple {k}"
        );
        assert!(xa.mul_small(0).is_infinity());
        assert_eq!(to_point::<C>(&xa.mul_small(1)), a);
    }

    #[test]
    fn g1_formulas_match_blstrs() {
        for seed in 0..8 {
            formulas_match_blstrs::<G1>(seed);
        }
    }

    #[test]
    fn g2_formulas_match_blstrs() {
        for seed in 0..4 {
            formulas_match_blstrs::<G2>(seed);
        }
    }
}
