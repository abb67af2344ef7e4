//! Groth16 parameters (proving key) and verifying key, in bellperson's file format.
//!
//! Layout (every point uncompressed, every length a big-endian `u32`):
//! `alpha_g1 beta_g1 beta_g2 gamma_g2 delta_g1 delta_g2 |ic| ic… |h| h… |l| l… |a| a… |b_g1| b_g1… |b_g2| b_g2…`.
//! The verifying key alone is the prefix up to and including `ic`.

mod codec;
mod prepared;
#[cfg(test)]
mod tests;

pub use prepared::PreparedParameters;

use crate::error::{Result, Section};
use codec::{read_len, read_points, read_single, write_len, write_points, UncompressedPoint};
use cuzk_field::{G1Affine, G2Affine};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Buffer size for file I/O; large batches bypass it, so it only serves the small reads.
const FILE_BUFFER: usize = 1 << 20;

/// The Groth16 verifying key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyingKey {
    /// α·G1.
    pub alpha_g1: G1Affine,
    /// β·G1.
    pub beta_g1: G1Affine,
    /// β·G2.
    pub beta_g2: G2Affine,
    /// γ·G2.
    pub gamma_g2: G2Affine,
    /// δ·G1.
    pub delta_g1: G1Affine,
    /// δ·G2.
    pub delta_g2: G2Affine,
    /// `(β·A_j(τ) + α·B_j(τ) + C_j(τ))/γ · G1` for every public input j (ONE included).
    pub ic: Vec<G1Affine>,
}

/// Groth16 parameters: the verifying key and the prover's queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameters {
    /// The verifying key.
    pub vk: VerifyingKey,
    /// `τ^i·Z(τ)/δ · G1` for `i` in `0..n-1` (`n` the domain size).
    pub h: Vec<G1Affine>,
    /// `(β·A_j(τ) + α·B_j(τ) + C_j(τ))/δ · G1` for every aux variable j.
    pub l: Vec<G1Affine>,
    /// `A_j(τ)·G1` for every input, then every aux variable with `A_j(τ) ≠ 0` (the A density).
    pub a: Vec<G1Affine>,
    /// `B_j(τ)·G1` for every variable with `B_j(τ) ≠ 0`, inputs first (the B densities).
    pub b_g1: Vec<G1Affine>,
    /// `B_j(τ)·G2`, the same variables as `b_g1`.
    pub b_g2: Vec<G2Affine>,
}

impl VerifyingKey {
    /// Number of public inputs the key verifies, the constant ONE not counted.
    pub fn num_public_inputs(&self) -> usize {
        self.ic.len().saturating_sub(1)
    }

    /// Writes the key in bellperson's format.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        write_points(&mut writer, &[self.alpha_g1, self.beta_g1])?;
        write_points(&mut writer, &[self.beta_g2, self.gamma_g2])?;
        write_points(&mut writer, &[self.delta_g1])?;
        write_points(&mut writer, &[self.delta_g2])?;
        write_len(&mut writer, self.ic.len())?;
        write_points(&mut writer, &self.ic)
    }

    /// Reads a key in bellperson's format. Every point is fully checked (on the curve and in
    /// the subgroup), as bellperson does; `ic` points may not be the identity.
    pub fn read<R: Read>(mut reader: R) -> Result<Self> {
        Self::read_inner(&mut reader)
    }

    fn read_inner<R: Read>(reader: &mut R) -> Result<Self> {
        let alpha_g1 = read_single(reader, Section::AlphaG1)?;
        let beta_g1 = read_single(reader, Section::BetaG1)?;
        let beta_g2 = read_single(reader, Section::BetaG2)?;
        let gamma_g2 = read_single(reader, Section::GammaG2)?;
        let delta_g1 = read_single(reader, Section::DeltaG1)?;
        let delta_g2 = read_single(reader, Section::DeltaG2)?;
        let ic_len = read_len(reader, Section::Ic)?;
        let ic = read_points(reader, Section::Ic, ic_len, true, false)?;
        Ok(VerifyingKey {
            alpha_g1,
            beta_g1,
            beta_g2,
            gamma_g2,
            delta_g1,
            delta_g2,
            ic,
        })
    }

    /// Reads a key from a file (a verifying-key file or the start of a parameter file).
    pub fn read_file(path: impl AsRef<Path>) -> Result<Self> {
        let file = File::open(path)?;
        Self::read(BufReader::with_capacity(FILE_BUFFER, file))
    }
}

impl Parameters {
    /// Writes the parameters in bellperson's format.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_section(&mut writer, &self.h)?;
        write_section(&mut writer, &self.l)?;
        write_section(&mut writer, &self.a)?;
        write_section(&mut writer, &self.b_g1)?;
        write_section(&mut writer, &self.b_g2)
    }

    /// Writes the parameters to a file (created or truncated).
    pub fn write_file(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let mut writer = BufWriter::with_capacity(FILE_BUFFER, File::create(path)?);
        self.write(&mut writer)?;
        writer.flush()
    }

    /// Reads parameters in bellperson's format.
    ///
    /// Points are decoded in parallel, batch by batch. Every point is checked to be a valid
    /// encoding on the curve and, except in the verifying key's fixed points, not the
    /// identity; with `checked` the query points are also checked to lie in the prime-order
    /// subgroup (slow: what bellperson's `checked` flag does). The verifying key is always
    /// fully checked. Data after the last section is not read.
    pub fn read<R: Read>(mut reader: R, checked: bool) -> Result<Self> {
        let vk = VerifyingKey::read_inner(&mut reader)?;
        let h = read_section::<G1Affine, _>(&mut reader, Section::H, checked)?;
        let l = read_section::<G1Affine, _>(&mut reader, Section::L, checked)?;
        let a = read_section::<G1Affine, _>(&mut reader, Section::A, checked)?;
        let b_g1 = read_section::<G1Affine, _>(&mut reader, Section::BG1, checked)?;
        let b_g2 = read_section::<G2Affine, _>(&mut reader, Section::BG2, checked)?;
        Ok(Parameters {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    /// Reads parameters from a file; see [`Parameters::read`].
    pub fn read_file(path: impl AsRef<Path>, checked: bool) -> Result<Self> {
        let file = File::open(path)?;
        Self::read(BufReader::with_capacity(FILE_BUFFER, file), checked)
    }
}

fn write_section<P: UncompressedPoint, W: Write>(writer: &mut W, points: &[P]) -> io::Result<()> {
    write_len(writer, points.len())?;
    write_points(writer, points)
}

fn read_section<P: UncompressedPoint, R: Read>(
    reader: &mut R,
    section: Section,
    checked: bool,
) -> Result<Vec<P>> {
    let len = read_len(reader, section)?;
    read_points(reader, section, len, checked, false)
}
