//! Parameters with their query points converted once to blst's affine layout, which blst's
//! multi-scalar multiplication reads directly: provers take these, so no proof pays for
//! the conversion.

use super::codec::{write_len, write_points, UncompressedPoint};
use super::{Parameters, VerifyingKey};
use blst::{blst_p1_affine, blst_p2_affine};
use cuzk_field::{Fp, Fp2, G1Affine, G2Affine};
use rayon::prelude::*;
use std::fmt;
use std::io::{self, Write};

/// Points converted back per batch while writing.
const WRITE_BATCH: usize = 1 << 15;

/// [`Parameters`] ready for proving: the verifying key plus every query in blst layout.
#[derive(Clone)]
pub struct PreparedParameters {
    vk: VerifyingKey,
    h: Vec<blst_p1_affine>,
    l: Vec<blst_p1_affine>,
    a: Vec<blst_p1_affine>,
    b_g1: Vec<blst_p1_affine>,
    b_g2: Vec<blst_p2_affine>,
}

impl fmt::Debug for PreparedParameters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The queries can hold millions of points: show their sizes only.
        f.debug_struct("PreparedParameters")
            .field("ic", &self.vk.ic.len())
            .field("h", &self.h.len())
            .field("l", &self.l.len())
            .field("a", &self.a.len())
            .field("b_g1", &self.b_g1.len())
            .field("b_g2", &self.b_g2.len())
            .finish()
    }
}

impl From<Parameters> for PreparedParameters {
    /// Converts the queries one at a time, freeing each source vector once converted, so the
    /// peak extra memory is one query.
    fn from(params: Parameters) -> Self {
        let Parameters {
            vk,
            h,
            l,
            a,
            b_g1,
            b_g2,
        } = params;
        // Each source vector is dropped by `into_blst` before the next is converted.
        PreparedParameters {
            vk,
            h: into_blst(h),
            l: into_blst(l),
            a: into_blst(a),
            b_g1: into_blst(b_g1),
            b_g2: into_blst(b_g2),
        }
    }
}

impl From<&Parameters> for PreparedParameters {
    fn from(params: &Parameters) -> Self {
        PreparedParameters {
            vk: params.vk.clone(),
            h: to_blst(&params.h),
            l: to_blst(&params.l),
            a: to_blst(&params.a),
            b_g1: to_blst(&params.b_g1),
            b_g2: to_blst(&params.b_g2),
        }
    }
}

/// [`to_blst`], consuming (and so freeing) the source.
fn into_blst<P, B>(points: Vec<P>) -> Vec<B>
where
    P: AsRef<B> + Sync,
    B: Copy + Send,
{
    to_blst(&points)
}

/// The blst affine points behind blstrs affine points (the same coordinates).
fn to_blst<P, B>(points: &[P]) -> Vec<B>
where
    P: AsRef<B> + Sync,
    B: Copy + Send,
{
    points.par_iter().map(|p| *p.as_ref()).collect()
}

impl PreparedParameters {
    /// Writes the parameters in bellperson's format: the same bytes as [`Parameters::write`]
    /// of the parameters these were prepared from, without converting them back whole.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        self.vk.write(&mut writer)?;
        write_converted(&mut writer, &self.h, g1_of)?;
        write_converted(&mut writer, &self.l, g1_of)?;
        write_converted(&mut writer, &self.a, g1_of)?;
        write_converted(&mut writer, &self.b_g1, g1_of)?;
        write_converted(&mut writer, &self.b_g2, g2_of)
    }

    /// Bytes of the file [`PreparedParameters::write`] writes: the verifying key, then each
    /// query as a 4-byte length and uncompressed points.
    pub fn file_len(&self) -> u64 {
        let mut vk = Vec::new();
        self.vk
            .write(&mut vk)
            .expect("writing into memory cannot fail");
        let g1 = (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) as u64;
        let (p1, p2) = (G1Affine::SIZE as u64, G2Affine::SIZE as u64);
        vk.len() as u64 + 5 * 4 + g1 * p1 + self.b_g2.len() as u64 * p2
    }

    /// Bytes the query points hold in memory (the verifying key is small beside them).
    pub fn host_bytes(&self) -> u64 {
        let g1 = (self.h.len() + self.l.len() + self.a.len() + self.b_g1.len()) as u64;
        g1 * std::mem::size_of::<blst_p1_affine>() as u64
            + self.b_g2.len() as u64 * std::mem::size_of::<blst_p2_affine>() as u64
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey {
        &self.vk
    }

    /// The H query.
    pub fn h(&self) -> &[blst_p1_affine] {
        &self.h
    }

    /// The L query.
    pub fn l(&self) -> &[blst_p1_affine] {
        &self.l
    }

    /// The A query (inputs, then aux variables in the A density).
    pub fn a(&self) -> &[blst_p1_affine] {
        &self.a
    }

    /// The B query in G1 (variables in the B densities, inputs first).
    pub fn b_g1(&self) -> &[blst_p1_affine] {
        &self.b_g1
    }

    /// The B query in G2.
    pub fn b_g2(&self) -> &[blst_p2_affine] {
        &self.b_g2
    }
}

/// One section (length, then the points), converted to blstrs' affine points a batch at a time.
fn write_converted<B: Sync, P: UncompressedPoint, W: Write>(
    writer: &mut W,
    points: &[B],
    convert: fn(&B) -> P,
) -> io::Result<()> {
    write_len(writer, points.len())?;
    for batch in points.chunks(WRITE_BATCH) {
        let converted: Vec<P> = batch.par_iter().map(convert).collect();
        write_points(writer, &converted)?;
    }
    Ok(())
}

/// The blstrs point with blst point `p`'s coordinates (Montgomery limbs both; blst's affine
/// identity, (0, 0), is blstrs' identity too).
fn g1_of(p: &blst_p1_affine) -> G1Affine {
    G1Affine::from_raw_unchecked(
        Fp::from_raw_unchecked(p.x.l),
        Fp::from_raw_unchecked(p.y.l),
        false,
    )
}

/// [`g1_of`] in G2.
fn g2_of(p: &blst_p2_affine) -> G2Affine {
    let fp2 = |c: &blst::blst_fp2| {
        Fp2::new(
            Fp::from_raw_unchecked(c.fp[0].l),
            Fp::from_raw_unchecked(c.fp[1].l),
        )
    };
    G2Affine::from_raw_unchecked(fp2(&p.x), fp2(&p.y), false)
}
