//! A model of the FP64-pipe Montgomery product (`f64::mul_2r` in
//! `kernels/field/fr_f64.cuh`), line for line, checked against blstrs: the limb split by two
//! fused multiply-adds (round toward zero, emulated exactly with 128-bit integers; the
//! subtraction between them is the host's own IEEE subtraction, as on the GPU), the 64-bit
//! columns of bit patterns with their exponent bits removed per column, and the digit-serial
//! reduction whose quotient digits need no multiplication.

use super::limbs32;
use crate::plan::*;
use cuzk_field::consts::FR_MODULUS;
use proptest::prelude::*;

const MASK52: u64 = (1 << 52) - 1;
const BITS_2_52: u64 = 0x4330_0000_0000_0000;
const BITS_2_104: u64 = 0x4670_0000_0000_0000;
const TWO_52: f64 = 4503599627370496.0;
const TWO_104: f64 = 20282409603651670423947251286016.0;
const TWO_104_PLUS_52: f64 = 20282409603651674927546878656512.0;

/// r in 52-bit limbs, as the kernel's `r_limb`.
const R_LIMB: [f64; 5] = [
    4503595332403201.0,
    52776117727231.0,
    2711223964777892.0,
    2203984808738944.0,
    127464551688605.0,
];

/// An integer-valued double as an exact integer.
fn to_int(x: f64) -> i128 {
    let u = x.to_bits();
    let e = ((u >> 52) & 0x7ff) as i32;
    if e == 0 {
        assert_eq!(u << 1, 0, "only zero is subnormal here");
        return 0;
    }
    let mant = ((u & MASK52) | (1 << 52)) as i128;
    let shift = e - 1075;
    let mag = if shift >= 0 {
        mant << shift
    } else {
        mant >> -shift
    };
    assert_eq!(
        mag >> shift.max(0) << shift.max(0),
        mag,
        "{x} is not an integer"
    );
    if u >> 63 == 1 {
        -mag
    } else {
        mag
    }
}

/// `__fma_rz` for integer-valued operands: a·b + c rounded toward zero to 53 bits.
fn fma_rz(a: f64, b: f64, c: f64) -> f64 {
    let v = to_int(a) * to_int(b) + to_int(c);
    let mut mag = v.unsigned_abs();
    let mut shift = 0;
    while mag >> 53 != 0 {
        mag >>= 1;
        shift += 1;
    }
    let d = mag as f64 * (2f64).powi(shift);
    if v < 0 {
        -d
    } else {
        d
    }
}

fn pairs(k: i32) -> u64 {
    match k {
        0..=4 => k as u64 + 1,
        5..=8 => 9 - k as u64,
        _ => 0,
    }
}

fn column_bias(k: i32) -> u64 {
    (pairs(k)
        .wrapping_mul(BITS_2_52)
        .wrapping_add(pairs(k - 1).wrapping_mul(BITS_2_104)))
    .wrapping_mul(2)
}

fn limb(x: u64) -> f64 {
    assert!(x <= MASK52);
    f64::from_bits(BITS_2_52 | x) - TWO_52
}

fn split(w: [u32; 8]) -> [f64; 5] {
    let a = |i: usize| w[2 * i] as u64 | (w[2 * i + 1] as u64) << 32;
    let (a0, a1, a2, a3) = (a(0), a(1), a(2), a(3));
    [
        limb(a0 & MASK52),
        limb((a0 >> 52 | a1 << 12) & MASK52),
        limb((a1 >> 40 | a2 << 24) & MASK52),
        limb((a2 >> 28 | a3 << 36) & MASK52),
        limb(a3 >> 16),
    ]
}

fn mad(c: &mut [u64; 10], k: usize, x: f64, y: f64) {
    let h = fma_rz(x, y, TWO_104);
    let l = fma_rz(x, y, TWO_104_PLUS_52 - h);
    c[k + 1] = c[k + 1].wrapping_add(h.to_bits());
    c[k] = c[k].wrapping_add(l.to_bits());
}

fn digit(c: u64, mask: u64) -> f64 {
    limb(0u64.wrapping_sub(c.wrapping_add(c << 32)) & mask)
}

fn mul_2r(a: [u32; 8], b: [u32; 8]) -> [u32; 8] {
    let (x, y) = (split(a), split(b));
    let mut c = [0u64; 10];
    for (k, ck) in c.iter_mut().enumerate() {
        *ck = 0u64.wrapping_sub(column_bias(k as i32));
    }
    for i in 0..5 {
        for j in 0..5 {
            mad(&mut c, i + j, x[i], y[j]);
        }
    }
    for i in 0..5 {
        let mask = if i < 4 { MASK52 } else { (1 << 48) - 1 };
        let m = digit(c[i], mask);
        for (j, &rj) in R_LIMB.iter().enumerate() {
            mad(&mut c, i + j, m, rj);
        }
        assert_eq!(c[i] & mask, 0, "round {i} left low bits");
        if i < 4 {
            c[i + 1] = c[i + 1].wrapping_add(c[i] >> 52);
        }
    }
    let low4 = (c[4] >> 48) & 0xf;
    c[5] += c[4] >> 52;
    for k in 5..9 {
        c[k + 1] += c[k] >> 52;
        c[k] &= MASK52;
    }
    let w = [
        low4 | c[5] << 4 | c[6] << 56,
        c[6] >> 8 | c[7] << 44,
        c[7] >> 20 | c[8] << 32,
        c[8] >> 32 | c[9] << 20,
    ];
    let mut out = [0u32; 8];
    for (i, wi) in w.iter().enumerate() {
        out[2 * i] = *wi as u32;
        out[2 * i + 1] = (wi >> 32) as u32;
    }
    out
}

fn wide(x: [u32; 8]) -> [u64; 4] {
    std::array::from_fn(|i| x[2 * i] as u64 | (x[2 * i + 1] as u64) << 32)
}

/// x + r, for x < r (the lazily reduced representative).
fn lift(x: [u64; 4]) -> [u64; 4] {
    let mut out = [0u64; 4];
    let mut carry = 0u128;
    for i in 0..4 {
        let s = x[i] as u128 + FR_MODULUS[i] as u128 + carry;
        out[i] = s as u64;
        carry = s >> 64;
    }
    assert_eq!(carry, 0, "2r < 2^256");
    out
}

fn less(a: [u64; 4], b: [u64; 4]) -> bool {
    a.iter().rev().cmp(b.iter().rev()) == std::cmp::Ordering::Less
}

/// Checks w·v for w < r and v < 2r (v given as x, lifted by r when `lifted`) against blstrs.
fn check(w: Scalar, v: Scalar, lifted: bool) {
    let wl = FrRepr::from(w).limbs;
    let vl = FrRepr::from(v).limbs;
    let vl = if lifted { lift(vl) } else { vl };
    let got = wide(mul_2r(limbs32(wl), limbs32(vl)));
    assert!(
        less(got, lift(FR_MODULUS)),
        "{w:?}·{v:?}: result not below 2r"
    );
    let reduced = if less(got, FR_MODULUS) {
        got
    } else {
        let mut d = [0u64; 4];
        let mut borrow = 0i128;
        for i in 0..4 {
            let s = got[i] as i128 - FR_MODULUS[i] as i128 - borrow;
            d[i] = s as u64;
            borrow = (s < 0) as i128;
        }
        d
    };
    assert_eq!(reduced, FrRepr::from(w * v).limbs, "{w:?}·{v:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn fp64_product_model_matches_blstrs(seed in any::<u64>(), lifted in any::<bool>()) {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        check(Scalar::random(&mut rng), Scalar::random(&mut rng), lifted);
    }
}

#[test]
fn fp64_product_model_edge_values() {
    let top = Scalar::try_from(FrRepr {
        limbs: [0, 0, 0, 1 << 62],
    })
    .expect("below r");
    let edge = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        Scalar::from(2u64),
        -Scalar::from(2u64),
        Scalar::from(u64::MAX),
        top,
    ];
    for w in edge {
        for v in edge {
            check(w, v, false);
            check(w, v, true);
        }
    }
}
