//! What the prover verifies before any expensive work: that the witness, its evaluations
//! and densities have the shape the parameters were made for, and that the witness
//! satisfies every constraint (so an honest caller never gets an invalid proof).

use crate::error::{Error, Result};
use crate::generator::domain_log_size;
use crate::params::PreparedParameters;
use cuzk_field::{Field, G1Affine, G2Affine, PrimeCurveAffine, Scalar};
use cuzk_synth::{Density, Evaluations};
use rayon::prelude::*;

fn expect(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::ShapeMismatch {
            what,
            expected,
            found,
        })
    }
}

/// The sizes of a parameter set's queries: all the checks need, so that provers whose
/// points live elsewhere (on a device) check the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Points of the verifying key's IC (one per public input, the constant included).
    pub ic: usize,
    /// Points of the H query (the domain size less one).
    pub h: usize,
    /// Points of the L query (one per aux variable).
    pub l: usize,
    /// Points of the A query (the variables A uses).
    pub a: usize,
    /// Points of the G1 B query (the variables B uses).
    pub b_g1: usize,
    /// Points of the G2 B query.
    pub b_g2: usize,
}

impl Shape {
    /// The shape of a prepared parameter set.
    pub fn of(params: &PreparedParameters) -> Shape {
        Shape {
            ic: params.vk().ic.len(),
            h: params.h().len(),
            l: params.l().len(),
            a: params.a().len(),
            b_g1: params.b_g1().len(),
            b_g2: params.b_g2().len(),
        }
    }
}

/// Checks the witness's assignment sizes (`aux_len` aux values) and constant against the
/// parameters.
pub fn check_witness(params: &Shape, inputs: &[Scalar], aux_len: usize) -> Result<()> {
    let ic = params.ic;
    if inputs.len() != ic {
        return Err(Error::WrongInputCount {
            expected: ic.saturating_sub(1),
            found: inputs.len().saturating_sub(1),
        });
    }
    if inputs.first() != Some(&Scalar::ONE) {
        return Err(Error::ConstantNotOne);
    }
    expect("number of aux variables (L query size)", params.l, aux_len)
}

/// Checks the densities and the row count against the parameters' queries; returns log2 of
/// the evaluation domain's size.
pub fn check_queries(
    params: &Shape,
    num_inputs: usize,
    num_aux: usize,
    density: &Density,
    num_rows: usize,
) -> Result<u32> {
    expect("A aux density length", num_aux, density.a_aux.len())?;
    expect("B input density length", num_inputs, density.b_input.len())?;
    expect("B aux density length", num_aux, density.b_aux.len())?;
    expect(
        "A query size implied by the A density",
        params.a,
        num_inputs + density.a_aux.count_ones(),
    )?;
    let b = density.b_input.count_ones() + density.b_aux.count_ones();
    expect(
        "B query (G1) size implied by the B densities",
        params.b_g1,
        b,
    )?;
    expect(
        "B query (G2) size implied by the B densities",
        params.b_g2,
        b,
    )?;
    // Only the size: the twiddles (a table of the domain's size) are the CPU prover's to make.
    let log_size = domain_log_size(num_rows)?;
    expect(
        "H query size implied by the row count",
        params.h,
        (1usize << log_size) - 1,
    )?;
    Ok(log_size)
}

/// Checks the evaluation vectors' lengths and that `a·b = c` on every row.
pub(crate) fn check_satisfied(eval: &Evaluations, num_rows: usize) -> Result<()> {
    expect("a evaluations", num_rows, eval.a.len())?;
    expect("b evaluations", num_rows, eval.b.len())?;
    expect("c evaluations", num_rows, eval.c.len())?;
    let bad = eval
        .a
        .par_iter()
        .zip(eval.b.par_iter())
        .zip(eval.c.par_iter())
        .position_first(|((a, b), c)| *a * b != *c);
    match bad {
        Some(row) => Err(Error::Unsatisfied { row }),
        None => Ok(()),
    }
}

/// Refuses a key whose δ is the identity: such a key lets anyone forge (a subverted setup).
pub fn check_delta(delta_g1: &G1Affine, delta_g2: &G2Affine) -> Result<()> {
    use crate::error::{PointError, Section};
    for (identity, section) in [
        (bool::from(delta_g1.is_identity()), Section::DeltaG1),
        (bool::from(delta_g2.is_identity()), Section::DeltaG2),
    ] {
        if identity {
            return Err(Error::InvalidPoint {
                section,
                index: 0,
                reason: PointError::Identity,
            });
        }
    }
    Ok(())
}
