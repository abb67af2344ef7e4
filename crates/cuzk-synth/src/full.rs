//! The reference constraint system: evaluates A, B and C of every constraint as the circuit
//! runs and tracks density, with the semantics of bellperson's proving assignment.

use crate::lc::{self, Trackers};
use crate::{Density, Evaluations, FullSynthesis, SynthError, Witness};
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use ff::Field;

/// Reference constraint system: assignments, a/b/c per constraint and the A/B densities.
///
/// [`FullCs::with_one`] starts a circuit's system with the input ONE; [`FullCs::finish`]
/// appends the input-consistency rows. It is extensible with bellperson's contract:
/// [`ConstraintSystem::new`] is empty, a sub-circuit synthesized into it allocates its own
/// "temp ONE" as its first input, and [`ConstraintSystem::extend`] drops that input (the
/// sub-circuit's ONE is ours) while appending everything else.
#[derive(Clone, Debug)]
pub struct FullCs {
    witness: Witness,
    eval: Evaluations,
    density: Density,
    /// First constraint that referred to an unallocated variable: (constraint, variable).
    unallocated: Option<(usize, String)>,
}

impl FullCs {
    /// A system for a whole circuit: input 0 is the constant ONE.
    pub fn with_one() -> FullCs {
        let mut cs = FullCs::new();
        cs.witness.inputs.push(Scalar::ONE);
        cs.density.b_input.push(false);
        cs
    }

    /// Appends the input-consistency rows (A = input, B = C = 0) and returns the result.
    pub fn finish(mut self) -> Result<FullSynthesis, SynthError> {
        if let Some((constraint, variable)) = self.unallocated {
            return Err(SynthError::UnallocatedVariable {
                constraint,
                variable,
            });
        }
        let n = self.witness.inputs.len();
        self.eval.a.extend_from_slice(&self.witness.inputs);
        self.eval.b.resize(self.eval.b.len() + n, Scalar::ZERO);
        self.eval.c.resize(self.eval.c.len() + n, Scalar::ZERO);
        Ok(FullSynthesis {
            witness: self.witness,
            eval: self.eval,
            density: self.density,
        })
    }

    fn num_constraints(&self) -> usize {
        self.eval.a.len()
    }
}

impl ConstraintSystem<Scalar> for FullCs {
    type Root = Self;

    /// An empty system (no ONE), as bellperson's: see [`FullCs`].
    fn new() -> Self {
        FullCs {
            witness: Witness::default(),
            eval: Evaluations::default(),
            density: Density::default(),
            unallocated: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.aux.push(f()?);
        self.density.a_aux.push(false);
        self.density.b_aux.push(false);
        Ok(Variable::new_unchecked(Index::Aux(
            self.witness.aux.len() - 1,
        )))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.witness.inputs.push(f()?);
        self.density.b_input.push(false);
        Ok(Variable::new_unchecked(Index::Input(
            self.witness.inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (inputs, aux) = (&self.witness.inputs, &self.witness.aux);
        let d = &mut self.density;
        // Inputs are in A's query anyway (the input rows), so only A's aux are tracked.
        let a_track = Trackers {
            inputs: None,
            aux: Some(&mut d.a_aux),
        };
        let a = lc::eval(&a(LinearCombination::zero()), inputs, aux, a_track);
        let b_track = Trackers {
            inputs: Some(&mut d.b_input),
            aux: Some(&mut d.b_aux),
        };
        let b = lc::eval(&b(LinearCombination::zero()), inputs, aux, b_track);
        let c = lc::eval(&c(LinearCombination::zero()), inputs, aux, Trackers::none());
        let row = self.num_constraints();
        let mut value = |r: Result<Scalar, String>| {
            r.unwrap_or_else(|variable| {
                self.unallocated.get_or_insert((row, variable));
                Scalar::ZERO
            })
        };
        let (a, b, c) = (value(a), value(b), value(c));
        self.eval.a.push(a);
        self.eval.b.push(b);
        self.eval.c.push(c);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        if self.unallocated.is_none() {
            if let Some((row, variable)) = &other.unallocated {
                self.unallocated = Some((self.num_constraints() + row, variable.clone()));
            }
        }
        // `other`'s input 0 is its temp ONE, which is our ONE: its B bit merges into ours
        // and the rest follow. A system that never allocated an input has nothing to skip.
        if !other.density.b_input.is_empty() && other.density.b_input.get(0) {
            self.density.b_input.set(0);
        }
        self.density.b_input.append_from(&other.density.b_input, 1);
        self.density.a_aux.append_from(&other.density.a_aux, 0);
        self.density.b_aux.append_from(&other.density.b_aux, 0);
        self.eval.a.extend_from_slice(&other.eval.a);
        self.eval.b.extend_from_slice(&other.eval.b);
        self.eval.c.extend_from_slice(&other.eval.c);
        self.witness
            .inputs
            .extend_from_slice(other.witness.inputs.get(1..).unwrap_or_default());
        self.witness.aux.extend_from_slice(&other.witness.aux);
    }
}
