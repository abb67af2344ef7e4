//! Signed-digit (Booth) window decomposition of scalars, exactly as the kernels compute it
//! (kernels/msm/digits.cuh, `for_each_digit`), so that it can be checked on any machine.
//!
//! With windows of c bits, a scalar s < 2^255 is written s = Σ d_w·2^(c·w) with every digit in
//! (−2^(c−1), 2^(c−1)]: a window's raw bits plus the carry from below, minus 2^c (carrying one
//! upward) when that exceeds 2^(c−1). Negative digits use the negated point, so each window
//! needs only 2^(c−1) buckets, half of what unsigned digits need. ⌈256 / c⌉ windows always
//! absorb the last carry, because s < 2^255 leaves the top window at most 2^(c−1) − 1 + 1.

use cuzk_field::{FrRepr, Scalar};

/// Fewest window bits the engine uses.
pub const MIN_WINDOW_BITS: u32 = 2;
/// Most window bits the engine uses (buckets per window 2^(c−1) stay indexable in 31 bits).
pub const MAX_WINDOW_BITS: u32 = 24;

/// Number of windows of `bits` bits a scalar needs in signed-digit form.
pub fn window_count(bits: u32) -> u32 {
    256u32.div_ceil(bits)
}

/// Buckets per window for `bits`-bit signed digits: one for each |d| in 1..=2^(bits−1).
pub fn buckets_per_window(bits: u32) -> u32 {
    1 << (bits - 1)
}

/// The canonical (not Montgomery) little-endian limbs of a scalar.
pub fn canonical_limbs(s: &Scalar) -> [u64; 4] {
    let bytes = s.to_bytes_le();
    std::array::from_fn(|i| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().unwrap()))
}

/// The canonical limbs of a scalar given in the kernels' Montgomery layout.
///
/// Panics if the limbs are not below the modulus.
pub fn canonical_from_repr(r: &FrRepr) -> [u64; 4] {
    canonical_limbs(&Scalar::try_from(*r).expect("scalar limbs below the modulus"))
}

/// Bits [pos, pos + bits) of a 256-bit little-endian number, `bits` ≤ 32.
fn window_bits(s: &[u64; 4], pos: u32, bits: u32) -> u32 {
    let limb = (pos / 64) as usize;
    let shift = pos % 64;
    let lo = s.get(limb).copied().unwrap_or(0) as u128;
    let hi = s.get(limb + 1).copied().unwrap_or(0) as u128;
    (((lo | (hi << 64)) >> shift) & ((1u128 << bits) - 1)) as u32
}

/// The signed digits of a canonical scalar, lowest window first: `window_count(bits)` of them.
pub fn signed_digits(s: &[u64; 4], bits: u32) -> Vec<i32> {
    assert!(
        (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&bits),
        "window bits {bits} outside {MIN_WINDOW_BITS}..={MAX_WINDOW_BITS}"
    );
    let half = 1u32 << (bits - 1);
    let mut carry = 0;
    (0..window_count(bits))
        .map(|w| {
            let d = window_bits(s, w * bits, bits) + carry;
            if d > half {
                carry = 1;
                -(((1u32 << bits) - d) as i32)
            } else {
                carry = 0;
                d as i32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    fn recompose(digits: &[i32], bits: u32) -> Scalar {
        let base = Scalar::from(2u64).pow_vartime([bits as u64]);
        digits.iter().rev().fold(Scalar::ZERO, |acc, &d| {
            let mag = Scalar::from(d.unsigned_abs() as u64);
            acc * base + if d < 0 { -mag } else { mag }
        })
    }

    fn check(s: Scalar, bits: u32) {
        let digits = signed_digits(&canonical_limbs(&s), bits);
        assert_eq!(digits.len() as u32, window_count(bits));
        let half = 1i32 << (bits - 1);
        for &d in &digits {
            assert!(
                -half < d && d <= half,
                "digit {d} out of range for {bits} bits"
            );
        }
        assert_eq!(
            recompose(&digits, bits),
            s,
            "scalar {s:?} with {bits}-bit windows"
        );
    }

    #[test]
    fn edge_scalars_recompose() {
        let r_minus_1 = -Scalar::ONE;
        let two_254 = Scalar::from(2u64).pow_vartime([254]);
        // (r − 1) / 2 = −1 / 2 in the field: the largest scalar below half the modulus.
        let half_r = -Scalar::from(2u64).invert().unwrap();
        for bits in MIN_WINDOW_BITS..=MAX_WINDOW_BITS {
            for s in [
                Scalar::ZERO,
                Scalar::ONE,
                r_minus_1,
                two_254,
                half_r,
                -two_254,
            ] {
                check(s, bits);
            }
        }
    }

    #[test]
    fn zero_and_one_have_the_expected_digits() {
        assert!(signed_digits(&[0; 4], 16).iter().all(|&d| d == 0));
        let one = signed_digits(&canonical_limbs(&Scalar::ONE), 16);
        assert_eq!(one[0], 1);
        assert!(one[1..].iter().all(|&d| d == 0));
    }

    #[test]
    fn canonical_limbs_match_the_repr() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let s = Scalar::random(&mut rng);
        assert_eq!(canonical_from_repr(&FrRepr::from(s)), canonical_limbs(&s));
        assert_eq!(canonical_limbs(&Scalar::from(7u64)), [7, 0, 0, 0]);
    }

    #[test]
    fn window_counts() {
        assert_eq!(window_count(16), 16);
        assert_eq!(window_count(18), 15);
        assert_eq!(window_count(20), 13);
        assert_eq!(window_count(22), 12);
        assert_eq!(buckets_per_window(16), 1 << 15);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn random_scalars_recompose(seed in any::<u64>(), bits in MIN_WINDOW_BITS..=MAX_WINDOW_BITS) {
            let s = Scalar::random(ChaCha20Rng::seed_from_u64(seed));
            check(s, bits);
        }
    }
}
