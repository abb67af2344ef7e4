//! A CPU model of the dedicated Fp square of the curve kernels (`fp_limbs::sqr` in
//! `kernels/field/bls12_381.cuh`), chain for chain with the carry flag emulated, checked
//! against blstrs on Montgomery limbs below 2p (the inputs the kernel accepts), edge values
//! included. The GPU side runs the same function in `gpu_fp_ops_match_blstrs`.

use cuzk_field::{consts::FP_MODULUS, Field, Fp, FpRepr};
use proptest::prelude::*;

const N: usize = 12;
const M0: u32 = 0xfffc_fffd; // −p^−1 mod 2^32

fn p32() -> [u32; N] {
    let mut p = [0u32; N];
    for (i, w) in FP_MODULUS.iter().enumerate() {
        p[2 * i] = *w as u32;
        p[2 * i + 1] = (*w >> 32) as u32;
    }
    p
}

/// The PTX carry-chain instructions, with the flag they share.
#[derive(Default)]
struct Chain {
    cf: u32,
}

impl Chain {
    fn sum(&mut self, s: u64) -> u32 {
        self.cf = (s >> 32) as u32;
        s as u32
    }
    fn add_cc(&mut self, a: u32, b: u32) -> u32 {
        self.sum(a as u64 + b as u64)
    }
    fn addc_cc(&mut self, a: u32, b: u32) -> u32 {
        self.sum(a as u64 + b as u64 + self.cf as u64)
    }
    fn addc(&mut self, a: u32, b: u32) -> u32 {
        (a as u64 + b as u64 + self.cf as u64) as u32
    }
    fn sub_cc(&mut self, a: u32, b: u32) -> u32 {
        self.cf = ((a as u64) < b as u64) as u32;
        a.wrapping_sub(b)
    }
    fn subc_cc(&mut self, a: u32, b: u32) -> u32 {
        let b = b as u64 + self.cf as u64;
        self.cf = ((a as u64) < b) as u32;
        (a as u64).wrapping_sub(b) as u32
    }
    fn subc(&mut self, a: u32, b: u32) -> u32 {
        (a as u64).wrapping_sub(b as u64 + self.cf as u64) as u32
    }
    fn lo(a: u32, b: u32) -> u64 {
        (a as u64 * b as u64) as u32 as u64
    }
    fn hi(a: u32, b: u32) -> u64 {
        (a as u64 * b as u64) >> 32
    }
    fn mad_lo_cc(&mut self, a: u32, b: u32, c: u32) -> u32 {
        self.sum(Self::lo(a, b) + c as u64)
    }
    fn madc_lo_cc(&mut self, a: u32, b: u32, c: u32) -> u32 {
        self.sum(Self::lo(a, b) + c as u64 + self.cf as u64)
    }
    fn madc_hi_cc(&mut self, a: u32, b: u32, c: u32) -> u32 {
        self.sum(Self::hi(a, b) + c as u64 + self.cf as u64)
    }
    fn madc_hi(&mut self, a: u32, b: u32, c: u32) -> u32 {
        (Self::hi(a, b) + c as u64 + self.cf as u64) as u32
    }
}

/// `mad_odd`: o ← o + Σ_{j odd} a_j·b·W^(j−1), optionally taking the flag in at o[0].
fn mad_odd(k: &mut Chain, o: &mut [u32; N], a: &[u32; N], b: u32, carry_in: bool) {
    o[0] = if carry_in {
        k.madc_lo_cc(a[1], b, o[0])
    } else {
        k.mad_lo_cc(a[1], b, o[0])
    };
    o[1] = k.madc_hi_cc(a[1], b, o[1]);
    for j in (3..N - 1).step_by(2) {
        o[j - 1] = k.madc_lo_cc(a[j], b, o[j - 1]);
        o[j] = k.madc_hi_cc(a[j], b, o[j]);
    }
    o[N - 2] = k.madc_lo_cc(a[N - 1], b, o[N - 2]);
    o[N - 1] = k.madc_hi(a[N - 1], b, o[N - 1]);
}

/// `mad_even`: e ← e + Σ_{j even} a_j·b·W^j, the carry out going into o[N − 1].
fn mad_even(k: &mut Chain, e: &mut [u32; N], o: &mut [u32; N], a: &[u32; N], b: u32) {
    e[0] = k.mad_lo_cc(a[0], b, e[0]);
    e[1] = k.madc_hi_cc(a[0], b, e[1]);
    for j in (2..N).step_by(2) {
        e[j] = k.madc_lo_cc(a[j], b, e[j]);
        e[j + 1] = k.madc_hi_cc(a[j], b, e[j + 1]);
    }
    o[N - 1] = k.addc(o[N - 1], 0);
}

/// `redc_shift`: T ← (T + m·p)/W, the arrays trading places, the flag left for the next row.
fn redc_shift(k: &mut Chain, e: &mut [u32; N], o: &mut [u32; N], carry_in: bool) {
    let p = p32();
    let m = e[0].wrapping_mul(M0);
    mad_odd(k, o, &p, m, carry_in);
    mad_even(k, e, o, &p, m);
    let mut e2 = *o;
    e2[0] = k.add_cc(o[0], e[1]);
    o[..N - 2].copy_from_slice(&e[2..]);
    o[N - 2] = 0;
    o[N - 1] = 0;
    *e = e2;
}

/// `final_sub`: r mod p for r < 2p.
fn final_sub(k: &mut Chain, r: &mut [u32; N]) {
    let p = p32();
    let mut s = [0u32; N];
    s[0] = k.sub_cc(r[0], p[0]);
    for j in 1..N {
        s[j] = k.subc_cc(r[j], p[j]);
    }
    if k.subc(0, 0) == 0 {
        *r = s;
    }
}

/// `sqr_chain`: t ← t + Σ a_i·a_j·W^(i+j) over j = j0, j0 + 2, … < N, carry into the word above.
fn sqr_chain(k: &mut Chain, t: &mut [u32; 2 * N], a: &[u32; N], i: usize, j0: usize) {
    t[i + j0] = k.mad_lo_cc(a[i], a[j0], t[i + j0]);
    t[i + j0 + 1] = k.madc_hi_cc(a[i], a[j0], t[i + j0 + 1]);
    let mut last = j0;
    for j in (j0 + 2..N).step_by(2) {
        t[i + j] = k.madc_lo_cc(a[i], a[j], t[i + j]);
        t[i + j + 1] = k.madc_hi_cc(a[i], a[j], t[i + j + 1]);
        last = j;
    }
    t[i + last + 2] = k.addc(t[i + last + 2], 0);
}

/// `fp_limbs::sqr`: a²·2^−384 mod p for a < 2p.
fn sqr(a: &[u32; N]) -> [u32; N] {
    let mut k = Chain::default();
    let mut t = [0u32; 2 * N];
    for i in 0..N - 1 {
        let even = if (i + 1) % 2 == 0 { i + 1 } else { i + 2 };
        let odd = if (i + 1) % 2 == 1 { i + 1 } else { i + 2 };
        if even < N {
            sqr_chain(&mut k, &mut t, a, i, even);
        }
        sqr_chain(&mut k, &mut t, a, i, odd);
    }
    t[0] = k.add_cc(t[0], t[0]);
    for j in 1..2 * N - 1 {
        t[j] = k.addc_cc(t[j], t[j]);
    }
    t[2 * N - 1] = k.addc(t[2 * N - 1], t[2 * N - 1]);
    t[0] = k.mad_lo_cc(a[0], a[0], t[0]);
    t[1] = k.madc_hi_cc(a[0], a[0], t[1]);
    for i in 1..N - 1 {
        t[2 * i] = k.madc_lo_cc(a[i], a[i], t[2 * i]);
        t[2 * i + 1] = k.madc_hi_cc(a[i], a[i], t[2 * i + 1]);
    }
    t[2 * N - 2] = k.madc_lo_cc(a[N - 1], a[N - 1], t[2 * N - 2]);
    t[2 * N - 1] = k.madc_hi(a[N - 1], a[N - 1], t[2 * N - 1]);

    let mut e = [0u32; N];
    let mut o = [0u32; N];
    e.copy_from_slice(&t[..N]);
    for i in 0..N {
        redc_shift(&mut k, &mut e, &mut o, i > 0);
    }
    // merge_raw, then the high half added (add_raw), then final_sub.
    let mut r = [0u32; N];
    r[0] = e[0];
    for j in 1..N - 1 {
        r[j] = k.addc_cc(e[j], o[j - 1]);
    }
    r[N - 1] = k.addc(e[N - 1], o[N - 2]);
    let hi: [u32; N] = t[N..].try_into().unwrap();
    let mut s = [0u32; N];
    s[0] = k.add_cc(r[0], hi[0]);
    for j in 1..N - 1 {
        s[j] = k.addc_cc(r[j], hi[j]);
    }
    s[N - 1] = k.addc(r[N - 1], hi[N - 1]);
    final_sub(&mut k, &mut s);
    s
}

fn to32(l: &[u64; 6]) -> [u32; N] {
    let mut r = [0u32; N];
    for (i, w) in l.iter().enumerate() {
        r[2 * i] = *w as u32;
        r[2 * i + 1] = (*w >> 32) as u32;
    }
    r
}

fn to64(l: &[u32; N]) -> [u64; 6] {
    let mut r = [0u64; 6];
    for (i, w) in r.iter_mut().enumerate() {
        *w = l[2 * i] as u64 | (l[2 * i + 1] as u64) << 32;
    }
    r
}

/// Montgomery limbs of x, plus p when `unreduced` (below 2p, as the kernel accepts).
fn limbs(x: Fp, unreduced: bool) -> [u32; N] {
    let mut a = to32(&FpRepr::from(x).limbs);
    if unreduced {
        let p = p32();
        let mut k = Chain::default();
        a[0] = k.add_cc(a[0], p[0]);
        for j in 1..N {
            a[j] = k.addc_cc(a[j], p[j]);
        }
        assert_eq!(k.cf, 0, "a + p stays below 2^384");
    }
    a
}

fn check(x: Fp, unreduced: bool) {
    let got = to64(&sqr(&limbs(x, unreduced)));
    let want = FpRepr::from(x.square()).limbs;
    assert_eq!(got, want, "square of {x:?} (input + p: {unreduced})");
}

#[test]
fn square_model_matches_blstrs_at_the_edges() {
    for x in [
        Fp::ZERO,
        Fp::ONE,
        -Fp::ONE,
        Fp::ONE.double(),
        -Fp::ONE.double(),
    ] {
        check(x, false);
        check(x, true);
    }
    // Montgomery limbs p − 1 and 2p − 1, the largest inputs: the element with limbs p − 1.
    let mut top = p32();
    top[0] -= 1;
    let x = Fp::try_from(FpRepr { limbs: to64(&top) }).unwrap();
    check(x, false);
    check(x, true);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn square_model_matches_blstrs(limbs in prop::array::uniform6(any::<u64>()), unreduced: bool) {
        // An element from arbitrary bits: reduced by clearing top bits until below p.
        let mut l = limbs;
        l[5] &= (1 << 61) - 1;
        let x = match Fp::try_from(FpRepr { limbs: l }) {
            Ok(x) => x,
            Err(_) => {
                l[5] &= (1 << 60) - 1;
                Fp::try_from(FpRepr { limbs: l }).unwrap()
            }
        };
        check(x, unreduced);
    }
}
