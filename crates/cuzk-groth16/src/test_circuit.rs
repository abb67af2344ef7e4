//! A tiny hand-written circuit for the unit tests: knowledge of `x` with `x³ + x + 5 = y`,
//! `y` public, plus variants that break it in chosen ways.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_field::{Field, Scalar};

/// `x³ + x + 5 = y` (public), and optionally extra public inputs or an unused aux variable.
#[derive(Clone, Debug)]
pub(crate) struct Cubic {
    /// The secret.
    pub x: Scalar,
    /// The claimed public output; a wrong value leaves the last constraint unsatisfied.
    pub y: Scalar,
    /// Extra public inputs, each constrained by `e·1 = e` in its own row.
    pub extra_inputs: Vec<Scalar>,
    /// Allocate an aux variable no constraint mentions.
    pub unused_aux: bool,
}

impl Cubic {
    /// An honest instance for `x`.
    pub fn new(x: u64) -> Self {
        let x = Scalar::from(x);
        Cubic {
            x,
            y: x * x * x + x + Scalar::from(5u64),
            extra_inputs: Vec::new(),
            unused_aux: false,
        }
    }

    /// The public inputs (ONE not included).
    pub fn public_inputs(&self) -> Vec<Scalar> {
        std::iter::once(self.y)
            .chain(self.extra_inputs.iter().copied())
            .collect()
    }
}

impl Circuit<Scalar> for Cubic {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x_val = self.x;
        let x = cs.alloc(|| "x", || Ok(x_val))?;
        let x2 = cs.alloc(|| "x^2", || Ok(x_val.square()))?;
        cs.enforce(|| "x*x = x^2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
        let x3 = cs.alloc(|| "x^3", || Ok(x_val.square() * x_val))?;
        cs.enforce(|| "x^2*x = x^3", |lc| lc + x2, |lc| lc + x, |lc| lc + x3);
        let y = cs.alloc_input(|| "y", || Ok(self.y))?;
        cs.enforce(
            || "(x^3 + x + 5)*1 = y",
            |lc| lc + x3 + x + (Scalar::from(5u64), CS::one()),
            |lc| lc + CS::one(),
            |lc| lc + y,
        );
        for (i, e) in self.extra_inputs.iter().enumerate() {
            let v = cs.alloc_input(|| format!("extra {i}"), || Ok(*e))?;
            cs.enforce(
                || format!("extra {i}"),
                |lc| lc + v,
                |lc| lc + CS::one(),
                |lc| lc + v,
            );
        }
        if self.unused_aux {
            cs.alloc(|| "unused", || Ok(Scalar::ONE))?;
        }
        Ok(())
    }
}
