//! Round trips and bad-input handling of the parameter file format.

use super::*;
use crate::error::{Error, PointError};
use cuzk_field::{Curve, Field, Fp, G1Projective, G2Projective, Group, PrimeCurveAffine};
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn g1s(n: usize, rng: &mut ChaCha8Rng) -> Vec<G1Affine> {
    (0..n)
        .map(|_| G1Projective::random(&mut *rng).to_affine())
        .collect()
}

fn g2s(n: usize, rng: &mut ChaCha8Rng) -> Vec<G2Affine> {
    (0..n)
        .map(|_| G2Projective::random(&mut *rng).to_affine())
        .collect()
}

/// Parameters of random points with distinct section sizes (not a usable key).
fn random_params(seed: u64) -> Parameters {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let g1 = g1s(3, &mut rng);
    let g2 = g2s(3, &mut rng);
    Parameters {
        vk: VerifyingKey {
            alpha_g1: g1[0],
            beta_g1: g1[1],
            beta_g2: g2[0],
            gamma_g2: g2[1],
            delta_g1: g1[2],
            delta_g2: g2[2],
            ic: g1s(2, &mut rng),
        },
        h: g1s(7, &mut rng),
        l: g1s(5, &mut rng),
        a: g1s(6, &mut rng),
        b_g1: g1s(4, &mut rng),
        b_g2: g2s(4, &mut rng),
    }
}

fn to_bytes(p: &Parameters) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

/// Byte offset of section `k`'s length prefix (0 = ic, 1 = h, … 5 = b_g2).
fn section_offset(p: &Parameters, k: usize) -> usize {
    let vk_fixed = 3 * 96 + 3 * 192;
    let sizes = [
        p.vk.ic.len() * 96,
        p.h.len() * 96,
        p.l.len() * 96,
        p.a.len() * 96,
        p.b_g1.len() * 96,
        p.b_g2.len() * 192,
    ];
    vk_fixed + sizes[..k].iter().map(|s| s + 4).sum::<usize>()
}

#[test]
fn round_trip_checked_and_unchecked() {
    let p = random_params(1);
    let bytes = to_bytes(&p);
    assert_eq!(bytes.len(), section_offset(&p, 6));
    assert_eq!(Parameters::read(&bytes[..], true).unwrap(), p);
    assert_eq!(Parameters::read(&bytes[..], false).unwrap(), p);
    // The verifying key alone is the file's prefix.
    assert_eq!(VerifyingKey::read(&bytes[..]).unwrap(), p.vk);
    let mut vk_bytes = Vec::new();
    p.vk.write(&mut vk_bytes).unwrap();
    assert_eq!(vk_bytes[..], bytes[..section_offset(&p, 1)]);
}

#[test]
fn prepared_parameters_write_the_same_bytes() {
    let mut params = random_params(11);
    // An identity point in a query, as B of an unused variable can be.
    params.b_g2[1] = G2Affine::identity();
    params.b_g1[2] = G1Affine::identity();
    let mut prepared = Vec::new();
    let converted = PreparedParameters::from(&params);
    converted.write(&mut prepared).unwrap();
    assert_eq!(prepared, to_bytes(&params));
    // The file's length is known before it is written (the cache checks free disk with it).
    assert_eq!(converted.file_len(), prepared.len() as u64);
    assert!(converted.host_bytes() > 0);
}

#[test]
fn file_round_trip() {
    let p = random_params(2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("test.params");
    p.write_file(&path).unwrap();
    assert_eq!(Parameters::read_file(&path, false).unwrap(), p);
    assert_eq!(VerifyingKey::read_file(&path).unwrap(), p.vk);
}

#[test]
fn truncation_names_the_section_and_counts() {
    let p = random_params(3);
    let bytes = to_bytes(&p);
    // Inside the fixed vk points: beta_g2 starts at byte 192.
    assert!(matches!(
        Parameters::read(&bytes[..200], false),
        Err(Error::Truncated {
            section: Section::BetaG2,
            expected: 1,
            found: 0
        })
    ));
    // Missing the length of l.
    let l_at = section_offset(&p, 2);
    assert!(matches!(
        Parameters::read(&bytes[..l_at + 2], false),
        Err(Error::MissingLength {
            section: Section::L
        })
    ));
    // Two and a half points into a (6 points).
    let a_at = section_offset(&p, 3) + 4;
    assert!(matches!(
        Parameters::read(&bytes[..a_at + 2 * 96 + 50], false),
        Err(Error::Truncated {
            section: Section::A,
            expected: 6,
            found: 2
        })
    ));
    // One byte short of the end: the last b_g2 point is incomplete.
    assert!(matches!(
        Parameters::read(&bytes[..bytes.len() - 1], true),
        Err(Error::Truncated {
            section: Section::BG2,
            expected: 4,
            found: 3
        })
    ));
    // A corrupt, huge length prefix reads as truncation, not as an allocation failure.
    let mut huge = bytes.clone();
    let h_at = section_offset(&p, 1);
    huge[h_at..h_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        Parameters::read(&huge[..], false),
        Err(Error::Truncated { section: Section::H, expected, .. }) if expected == u32::MAX as usize
    ));
}

#[test]
fn corrupted_points_name_section_and_index() {
    let p = random_params(4);
    let bytes = to_bytes(&p);
    // Flip a bit of the y coordinate of l[3]: off the curve.
    let mut bad = bytes.clone();
    let at = section_offset(&p, 2) + 4 + 3 * 96 + 60;
    bad[at] ^= 1;
    for checked in [false, true] {
        assert!(matches!(
            Parameters::read(&bad[..], checked),
            Err(Error::InvalidPoint {
                section: Section::L,
                index: 3,
                reason: PointError::NotOnCurve
            })
        ));
    }
    // An x coordinate above the modulus in gamma_g2.
    let mut bad = bytes.clone();
    bad[2 * 96 + 192..2 * 96 + 192 + 48].fill(0x1f);
    assert!(matches!(
        VerifyingKey::read(&bad[..]),
        Err(Error::InvalidPoint {
            section: Section::GammaG2,
            index: 0,
            reason: PointError::NotOnCurve
        })
    ));
}

#[test]
fn identity_points_are_refused_in_queries() {
    let mut p = random_params(5);
    p.b_g1[2] = G1Affine::identity();
    let bytes = to_bytes(&p);
    assert!(matches!(
        Parameters::read(&bytes[..], false),
        Err(Error::InvalidPoint {
            section: Section::BG1,
            index: 2,
            reason: PointError::Identity
        })
    ));
}

/// A point on E(Fp): y² = x³ + 4 but (almost surely) outside the prime-order subgroup.
fn off_subgroup_g1() -> G1Affine {
    let mut x = Fp::from(1u64);
    loop {
        let rhs = x.square() * x + Fp::from(4u64);
        let y: Option<Fp> = rhs.sqrt().into();
        if let Some(y) = y {
            let p = G1Affine::from_raw_unchecked(x, y, false);
            if bool::from(p.is_on_curve()) && !bool::from(p.is_torsion_free()) {
                return p;
            }
        }
        x += Fp::ONE;
    }
}

#[test]
fn subgroup_check_is_optional_for_queries() {
    let mut p = random_params(6);
    p.h[4] = off_subgroup_g1();
    let bytes = to_bytes(&p);
    assert!(matches!(
        Parameters::read(&bytes[..], true),
        Err(Error::InvalidPoint {
            section: Section::H,
            index: 4,
            reason: PointError::NotInSubgroup
        })
    ));
    assert_eq!(Parameters::read(&bytes[..], false).unwrap().h[4], p.h[4]);

    // The verifying key is always checked.
    let mut p = random_params(7);
    p.vk.ic[1] = off_subgroup_g1();
    let bytes = to_bytes(&p);
    assert!(matches!(
        Parameters::read(&bytes[..], false),
        Err(Error::InvalidPoint {
            section: Section::Ic,
            index: 1,
            reason: PointError::NotInSubgroup
        })
    ));
}
