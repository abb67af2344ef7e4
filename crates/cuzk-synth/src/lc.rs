//! Evaluation of bellpepper linear combinations against an assignment, shared by the
//! constraint systems that evaluate as they go (reference and checking).

use crate::Bitmap;
use bellpepper_core::LinearCombination;
use cuzk_field::Scalar;
use ff::Field;

/// Where density bits go while a linear combination is evaluated (`None`: not tracked).
pub(crate) struct Trackers<'a> {
    pub(crate) inputs: Option<&'a mut Bitmap>,
    pub(crate) aux: Option<&'a mut Bitmap>,
}

impl Trackers<'_> {
    pub(crate) fn none() -> Self {
        Trackers {
            inputs: None,
            aux: None,
        }
    }
}

/// `Σ coeff·value` over the terms of `lc`, marking every variable that has a nonzero
/// coefficient in the trackers. Zero coefficients are skipped entirely so that density
/// means "nonzero somewhere", as a parameter file's filtered queries do.
///
/// Errors with a description of the first variable that is not allocated yet.
pub(crate) fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut track: Trackers<'_>,
) -> Result<Scalar, String> {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if *coeff == Scalar::ZERO {
            continue;
        }
        let value = inputs.get(i).ok_or_else(|| format!("input {i}"))?;
        add_term(&mut acc, coeff, value);
        if let Some(t) = track.inputs.as_deref_mut() {
            t.set(i);
        }
    }
    for (&j, coeff) in lc.iter_aux() {
        if *coeff == Scalar::ZERO {
            continue;
        }
        let value = aux.get(j).ok_or_else(|| format!("aux {j}"))?;
        add_term(&mut acc, coeff, value);
        if let Some(t) = track.aux.as_deref_mut() {
            t.set(j);
        }
    }
    Ok(acc)
}

/// `acc += coeff·value`, skipping the multiplication for the very common coefficient one.
#[inline(always)]
pub(crate) fn add_term(acc: &mut Scalar, coeff: &Scalar, value: &Scalar) {
    if *coeff == Scalar::ONE {
        *acc += value;
    } else {
        *acc += *value * coeff;
    }
}
