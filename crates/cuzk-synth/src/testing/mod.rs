//! Seeded random circuits for tests (cargo feature `testing`).
//!
//! A [`RandomCircuit`] mixes `alloc`, `alloc_input`, the witness-generator hooks
//! (`extend_aux`, `extend_inputs`, `allocate_empty`), nested namespaces, self-contained
//! sub-circuits (appended with `extend` where the constraint system is extensible) and
//! `enforce` with random linear combinations: empty ones, repeated variables, the ONE
//! variable, zero and ±1 coefficients, additions and subtractions. It is satisfiable by
//! construction: most constraints end their C with a fresh aux whose value solves
//! `a·b = c`; the rest are `0·b = 0` with A and C empty or all-zero.

mod generate;
mod run;

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_field::Scalar;
use ff::Field;

/// A variable by its position in the circuit's own tables (inputs include ONE at 0).
#[derive(Clone, Copy, Debug)]
enum Var {
    Input(usize),
    Aux(usize),
}

/// One term: variable, coefficient, and whether it is subtracted rather than added.
type Term = (Var, Scalar, bool);

#[derive(Clone, Debug)]
enum Op {
    /// `alloc` of `values[id]`.
    Alloc(usize),
    AllocInput(Scalar),
    /// `extend_aux` on witness generators, one `alloc` each otherwise.
    ExtendAux(Vec<Scalar>),
    /// `extend_inputs` on witness generators, one `alloc_input` each otherwise.
    ExtendInputs(Vec<Scalar>),
    /// `allocate_empty` then filled on witness generators, `alloc`s otherwise.
    AllocateEmpty {
        aux: Vec<Scalar>,
        inputs: Vec<Scalar>,
    },
    Enforce {
        name: String,
        a: Vec<Term>,
        b: Vec<Term>,
        c: Vec<Term>,
    },
    Namespace(String, Vec<Op>),
    /// A sub-circuit over its own variables (and ONE): synthesized into `CS::new()` (which
    /// gets a temp ONE first, as bellperson's contract asks) and appended with `extend` when
    /// the constraint system is extensible, inline otherwise.
    Segment(String, Vec<Op>),
}

/// What a test may want to know about one constraint.
#[derive(Clone, Debug)]
struct ConstraintInfo {
    /// Full namespace path as a non-extensible constraint system sees it.
    name: String,
    /// `values` slot of the aux that solves it, if any.
    solver: Option<usize>,
}

/// A seeded random circuit, satisfiable unless broken with
/// [`RandomCircuit::break_constraint`].
#[derive(Clone, Debug)]
pub struct RandomCircuit {
    ops: Vec<Op>,
    values: Vec<Scalar>,
    constraints: Vec<ConstraintInfo>,
    public_inputs: Vec<Scalar>,
    num_aux: usize,
}

impl RandomCircuit {
    /// A random circuit of about `size` operations (roughly half of them constraints),
    /// entirely determined by `seed`.
    pub fn new(seed: u64, size: usize) -> RandomCircuit {
        generate::generate(seed, size)
    }

    /// Number of constraints the circuit enforces (input-consistency rows not counted).
    pub fn num_constraints(&self) -> usize {
        self.constraints.len()
    }

    /// Number of inputs, ONE included.
    pub fn num_inputs(&self) -> usize {
        self.public_inputs.len() + 1
    }

    /// Number of aux variables.
    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// Values of the public inputs, ONE excluded, in allocation order.
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.public_inputs
    }

    /// Full namespace path of constraint `i` (e.g. `ns3/segment7/c9`).
    pub fn constraint_name(&self, i: usize) -> &str {
        &self.constraints[i].name
    }

    /// Constraints [`RandomCircuit::break_constraint`] can break.
    pub fn breakable_constraints(&self) -> Vec<usize> {
        (0..self.constraints.len())
            .filter(|&i| self.constraints[i].solver.is_some())
            .collect()
    }

    /// Makes constraint `i` fail by shifting the value of the aux that solves it; constraints
    /// before `i` still hold. Returns false (and changes nothing) if `i` has no solver.
    pub fn break_constraint(&mut self, i: usize) -> bool {
        match self.constraints.get(i).and_then(|c| c.solver) {
            Some(slot) => {
                self.values[slot] += Scalar::ONE;
                true
            }
            None => false,
        }
    }
}

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let (mut inputs, mut aux) = (vec![CS::one()], Vec::new());
        run::run(cs, &self.ops, &self.values, &mut inputs, &mut aux)
    }
}
