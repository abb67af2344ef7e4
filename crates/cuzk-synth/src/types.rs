//! The plain data both synthesis paths produce: assignments, evaluations, densities.

use crate::{Bitmap, PackedAux};
use cuzk_field::Scalar;
use std::borrow::Cow;

/// Assignments of one circuit instance. The aux assignment is `aux`, value by value, or, when
/// the synthesis packed it (a native generator of a mostly-boolean witness), `packed`, and
/// `aux` is then empty: read it through [`Witness::aux_len`] and [`Witness::unpacked`] where
/// either may come.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Witness {
    /// Public inputs; `inputs[0]` is the constant ONE.
    pub inputs: Vec<Scalar>,
    /// Private (auxiliary) variables, unless `packed` holds them.
    pub aux: Vec<Scalar>,
    /// The private variables packed (zeros and ones as bits), when the synthesis made them so.
    pub packed: Option<Box<PackedAux>>,
}

impl Witness {
    /// Inputs and aux values, aux values one by one.
    pub fn new(inputs: Vec<Scalar>, aux: Vec<Scalar>) -> Witness {
        Witness {
            inputs,
            aux,
            packed: None,
        }
    }

    /// Number of aux values, packed or not.
    pub fn aux_len(&self) -> usize {
        self.aux.len() + self.packed.as_ref().map_or(0, |p| p.len())
    }

    /// The witness with its aux values one by one: itself, or a copy expanded from the packed
    /// form.
    pub fn unpacked(&self) -> Cow<'_, Witness> {
        match &self.packed {
            None => Cow::Borrowed(self),
            Some(p) => {
                let mut aux = self.aux.clone();
                aux.extend(p.to_values());
                Cow::Owned(Witness::new(self.inputs.clone(), aux))
            }
        }
    }
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
