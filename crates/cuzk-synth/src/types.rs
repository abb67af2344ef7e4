//! The plain data both synthesis paths produce: assignments, evaluations, densities.

use crate::Bitmap;
use cuzk_field::Scalar;

/// Assignments of one circuit instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs; `inputs[0]` is the constant ONE.
    pub inputs: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux: Vec<Scalar>,
}

/// `a = A·w`, `b = B·w`, `c = C·w`, one entry per row (constraints, then input rows).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluations {
    /// A·w.
    pub a: Vec<Scalar>,
    /// B·w.
    pub b: Vec<Scalar>,
    /// C·w.
    pub c: Vec<Scalar>,
}

/// Which variables the A and B queries of the proving key contain (Groth16's density).
/// Every input is in A (through the input rows), so A's input density is implied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    /// Aux variables that appear in some row of A with a nonzero coefficient.
    pub a_aux: Bitmap,
    /// Inputs that appear in some row of B with a nonzero coefficient.
    pub b_input: Bitmap,
    /// Aux variables that appear in some row of B with a nonzero coefficient.
    pub b_aux: Bitmap,
}

/// Everything the reference path produces for one instance.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FullSynthesis {
    /// The assignments.
    pub witness: Witness,
    /// The a/b/c evaluations.
    pub eval: Evaluations,
    /// The A/B densities.
    pub density: Density,
}
