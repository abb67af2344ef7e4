//! Groth16 proofs and their 192-byte compressed encoding (bellperson's: A, B, C compressed).

use crate::error::{Error, PointError, Result, Section};
use cuzk_field::{G1Affine, G2Affine, PrimeCurveAffine};
use std::io::{self, Read, Write};

const G1_COMPRESSED: usize = 48;
const G2_COMPRESSED: usize = 96;

/// A Groth16 proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// A, in G1.
    pub a: G1Affine,
    /// B, in G2.
    pub b: G2Affine,
    /// C, in G1.
    pub c: G1Affine,
}

impl Proof {
    /// Bytes of an encoded proof.
    pub const SIZE: usize = 2 * G1_COMPRESSED + G2_COMPRESSED;

    /// The compressed encoding: A (48 bytes), B (96), C (48).
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[..G1_COMPRESSED].copy_from_slice(&self.a.to_compressed());
        out[G1_COMPRESSED..G1_COMPRESSED + G2_COMPRESSED].copy_from_slice(&self.b.to_compressed());
        out[G1_COMPRESSED + G2_COMPRESSED..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes a proof, checking each point is on the curve, in the subgroup and (as
    /// bellperson requires) not the identity.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::SIZE {
            return Err(Error::ProofLength {
                expected: Self::SIZE,
                found: bytes.len(),
            });
        }
        let (a, rest) = bytes.split_at(G1_COMPRESSED);
        let (b, c) = rest.split_at(G2_COMPRESSED);
        Ok(Proof {
            a: decode_g1(a.try_into().expect("48 bytes"), Section::ProofA)?,
            b: decode_g2(b.try_into().expect("96 bytes"), Section::ProofB)?,
            c: decode_g1(c.try_into().expect("48 bytes"), Section::ProofC)?,
        })
    }

    /// Writes [`Proof::to_bytes`].
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        writer.write_all(&self.to_bytes())
    }

    /// Reads exactly [`Proof::SIZE`] bytes and decodes them.
    pub fn read<R: Read>(mut reader: R) -> Result<Self> {
        let mut buf = [0u8; Self::SIZE];
        reader.read_exact(&mut buf)?;
        Self::from_bytes(&buf)
    }
}

fn invalid(section: Section, reason: PointError) -> Error {
    Error::InvalidPoint {
        section,
        index: 0,
        reason,
    }
}

fn decode_g1(bytes: &[u8; G1_COMPRESSED], section: Section) -> Result<G1Affine> {
    let p: Option<G1Affine> = G1Affine::from_compressed_unchecked(bytes).into();
    let p = p.ok_or_else(|| invalid(section, PointError::NotOnCurve))?;
    if bool::from(p.is_identity()) {
        return Err(invalid(section, PointError::Identity));
    }
    if !bool::from(p.is_torsion_free()) {
        return Err(invalid(section, PointError::NotInSubgroup));
    }
    Ok(p)
}

fn decode_g2(bytes: &[u8; G2_COMPRESSED], section: Section) -> Result<G2Affine> {
    let p: Option<G2Affine> = G2Affine::from_compressed_unchecked(bytes).into();
    let p = p.ok_or_else(|| invalid(section, PointError::NotOnCurve))?;
    if bool::from(p.is_identity()) {
        return Err(invalid(section, PointError::Identity));
    }
    if !bool::from(p.is_torsion_free()) {
        return Err(invalid(section, PointError::NotInSubgroup));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_field::{Curve, G1Projective, G2Projective, Group};
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn random_proof(seed: u64) -> Proof {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Proof {
            a: G1Projective::random(&mut rng).to_affine(),
            b: G2Projective::random(&mut rng).to_affine(),
            c: G1Projective::random(&mut rng).to_affine(),
        }
    }

    #[test]
    fn bytes_round_trip() {
        let p = random_proof(41);
        let bytes = p.to_bytes();
        assert_eq!(Proof::from_bytes(&bytes).unwrap(), p);
        let mut written = Vec::new();
        p.write(&mut written).unwrap();
        assert_eq!(written, bytes);
        assert_eq!(Proof::read(&written[..]).unwrap(), p);
    }

    #[test]
    fn bad_bytes_are_typed_errors() {
        let bytes = random_proof(42).to_bytes();
        assert!(matches!(
            Proof::from_bytes(&bytes[..191]),
            Err(Error::ProofLength {
                expected: 192,
                found: 191
            })
        ));
        // Flip bits of B's x coordinate: almost surely no longer on the curve.
        let mut bad = bytes;
        bad[60] ^= 0x55;
        assert!(matches!(
            Proof::from_bytes(&bad),
            Err(Error::InvalidPoint {
                section: Section::ProofB,
                ..
            })
        ));
        // The compressed identity in C.
        let mut bad = bytes;
        bad[144] = 0xc0;
        bad[145..].fill(0);
        assert!(matches!(
            Proof::from_bytes(&bad),
            Err(Error::InvalidPoint {
                section: Section::ProofC,
                reason: PointError::Identity,
                ..
            })
        ));
    }
}
