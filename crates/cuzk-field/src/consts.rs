//! Constants of Fr and Fp that NTT code and kernel generators need, as little-endian `u64` limbs.
//!
//! Montgomery constants are derived at compile time from the moduli, so only the moduli
//! themselves are written out; tests check every value against blstrs.

use crate::Scalar;
use ff::{Field, PrimeField};

/// The scalar field modulus r, little-endian, canonical (not Montgomery).
pub const FR_MODULUS: [u64; 4] = [
    0xffff_ffff_0000_0001,
    0x53bd_a402_fffe_5bfe,
    0x3339_d808_09a1_d805,
    0x73ed_a753_299d_7d48,
];

/// The base field modulus p, little-endian, canonical (not Montgomery).
pub const FP_MODULUS: [u64; 6] = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

/// `R = 2^256 mod r`: the Montgomery form of 1 in Fr.
pub const FR_R: [u64; 4] = pow2_mod::<4>(256, &FR_MODULUS);
/// `R² = 2^512 mod r`: multiplying by it converts a canonical Fr value to Montgomery form.
pub const FR_R2: [u64; 4] = pow2_mod::<4>(512, &FR_MODULUS);
/// `-r⁻¹ mod 2^64`, the Montgomery reduction factor for Fr.
pub const FR_INV: u64 = neg_inv64(FR_MODULUS[0]);

/// `R = 2^384 mod p`: the Montgomery form of 1 in Fp.
pub const FP_R: [u64; 6] = pow2_mod::<6>(384, &FP_MODULUS);
/// `R² = 2^768 mod p`.
pub const FP_R2: [u64; 6] = pow2_mod::<6>(768, &FP_MODULUS);
/// `-p⁻¹ mod 2^64`, the Montgomery reduction factor for Fp.
pub const FP_INV: u64 = neg_inv64(FP_MODULUS[0]);

/// Fr has a multiplicative subgroup of order 2^32: NTTs exist for every size up to 2^32.
pub const FR_TWO_ADICITY: u32 = Scalar::S;

/// The coset generator Groth16 provers use for the H polynomial (bellperson: `MULTIPLICATIVE_GENERATOR`, 7).
pub const COSET_GENERATOR: Scalar = Scalar::MULTIPLICATIVE_GENERATOR;

/// A primitive `2^log_n`-th root of unity of Fr, the one bellperson's domains use
/// (`ROOT_OF_UNITY` squared `32 - log_n` times). Returns `None` when `log_n > 32`.
pub fn root_of_unity(log_n: u32) -> Option<Scalar> {
    if log_n > FR_TWO_ADICITY {
        return None;
    }
    let mut w = Scalar::ROOT_OF_UNITY;
    for _ in log_n..FR_TWO_ADICITY {
        w = w.square();
    }
    Some(w)
}

/// The inverse of [`root_of_unity`].
pub fn root_of_unity_inv(log_n: u32) -> Option<Scalar> {
    root_of_unity(log_n).map(|w| w.invert().unwrap())
}

/// `2^k mod m` for a little-endian multi-limb modulus, by repeated doubling (compile time only).
const fn pow2_mod<const N: usize>(k: u32, m: &[u64; N]) -> [u64; N] {
    let mut acc = [0u64; N];
    acc[0] = 1;
    let mut i = 0;
    while i < k {
        // acc = 2·acc mod m; acc < m < 2^(64N-1) for both moduli, so no bit is lost.
        let mut carry = 0u64;
        let mut j = 0;
        while j < N {
            let next = acc[j] >> 63;
            acc[j] = (acc[j] << 1) | carry;
            carry = next;
            j += 1;
        }
        if !lt(&acc, m) {
            acc = sub(&acc, m);
        }
        i += 1;
    }
    acc
}

const fn lt<const N: usize>(a: &[u64; N], b: &[u64; N]) -> bool {
    let mut j = N;
    while j > 0 {
        j -= 1;
        if a[j] != b[j] {
            return a[j] < b[j];
        }
    }
    false
}

const fn sub<const N: usize>(a: &[u64; N], b: &[u64; N]) -> [u64; N] {
    let mut out = [0u64; N];
    let mut borrow = 0u64;
    let mut j = 0;
    while j < N {
        let (d1, b1) = a[j].overflowing_sub(b[j]);
        let (d2, b2) = d1.overflowing_sub(borrow);
        out[j] = d2;
        borrow = (b1 | b2) as u64;
        j += 1;
    }
    out
}

/// `-m0⁻¹ mod 2^64` by Newton iteration (m0 odd).
const fn neg_inv64(m0: u64) -> u64 {
    let mut inv = 1u64;
    let mut i = 0;
    while i < 6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m0.wrapping_mul(inv)));
        i += 1;
    }
    inv.wrapping_neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Fp, FpRepr, FrRepr};

    #[test]
    fn montgomery_one_matches_blstrs() {
        assert_eq!(FrRepr::from(Scalar::ONE).limbs, FR_R);
        assert_eq!(FpRepr::from(Fp::ONE).limbs, FP_R);
    }

    #[test]
    fn r2_is_montgomery_form_of_r() {
        // The canonical integer R mod r, loaded into blstrs, is stored as R·R mod r = R².
        let mut bytes = [0u8; 32];
        for (i, l) in FR_R.iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&l.to_le_bytes());
        }
        let r = Scalar::from_bytes_le(&bytes).unwrap();
        assert_eq!(FrRepr::from(r).limbs, FR_R2);

        let mut bytes = [0u8; 48];
        for (i, l) in FP_R.iter().enumerate() {
            bytes[8 * i..8 * i + 8].copy_from_slice(&l.to_le_bytes());
        }
        let r = Fp::from_bytes_le(&bytes).unwrap();
        assert_eq!(FpRepr::from(r).limbs, FP_R2);
    }

    #[test]
    fn inv_is_negated_inverse() {
        assert_eq!(FR_INV, 0xffff_fffe_ffff_ffff);
        assert_eq!(FR_MODULUS[0].wrapping_mul(FR_INV), u64::MAX);
        assert_eq!(FP_MODULUS[0].wrapping_mul(FP_INV), u64::MAX);
    }

    #[test]
    fn moduli_match_blstrs() {
        // r − 1 in canonical little-endian bytes must equal FR_MODULUS − 1.
        let minus_one = -Scalar::ONE;
        let bytes = minus_one.to_bytes_le();
        let mut want = FR_MODULUS;
        want[0] -= 1;
        for (i, l) in want.iter().enumerate() {
            assert_eq!(&bytes[8 * i..8 * i + 8], &l.to_le_bytes());
        }
        let bytes = (-Fp::ONE).to_bytes_le();
        let mut want = FP_MODULUS;
        want[0] -= 1;
        for (i, l) in want.iter().enumerate() {
            assert_eq!(&bytes[8 * i..8 * i + 8], &l.to_le_bytes());
        }
    }

    #[test]
    fn roots_of_unity_have_exact_order() {
        for log_n in [0u32, 1, 5, 20, 27, 32] {
            let w = root_of_unity(log_n).unwrap();
            assert_eq!(
                w.pow_vartime([1u64 << log_n]),
                Scalar::ONE,
                "log_n = {log_n}"
            );
            if log_n > 0 {
                assert_ne!(
                    w.pow_vartime([1u64 << (log_n - 1)]),
                    Scalar::ONE,
                    "log_n = {log_n}"
                );
            }
            assert_eq!(w * root_of_unity_inv(log_n).unwrap(), Scalar::ONE);
        }
        assert!(root_of_unity(33).is_none());
        assert_eq!(COSET_GENERATOR, Scalar::from(7u64));
    }
}
