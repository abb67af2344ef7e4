//! The checking constraint system: finds the first constraint a circuit's assignment does
//! not satisfy and names it by its full namespace path.

use crate::lc::{self, Trackers};
use crate::SynthError;
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::Scalar;
use ff::Field;

/// The first problem found, by constraint index.
#[derive(Clone, Debug)]
enum Failure {
    Unsatisfied { index: usize, name: String },
    Unallocated { constraint: usize, variable: String },
}

/// Constraint system that evaluates each constraint as it comes and remembers the first
/// failure. Namespace names must be built on entry (the closures cannot be kept), but a
/// constraint's own annotation is only built for the one that fails, and after the first
/// failure nothing is evaluated any more.
#[derive(Clone, Debug)]
struct CheckingCs {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    /// Current namespace path, `a/b/c`.
    path: String,
    /// Length of `path` before each open namespace was entered.
    marks: Vec<usize>,
    num_constraints: usize,
    failure: Option<Failure>,
}

impl CheckingCs {
    fn full_name(&self, leaf: String) -> String {
        if self.path.is_empty() {
            leaf
        } else {
            format!("{}/{leaf}", self.path)
        }
    }
}

impl ConstraintSystem<Scalar> for CheckingCs {
    type Root = Self;

    fn new() -> Self {
        CheckingCs {
            inputs: vec![Scalar::ONE],
            aux: Vec::new(),
            path: String::new(),
            marks: Vec::new(),
            num_constraints: 0,
            failure: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let index = self.num_constraints;
        self.num_constraints += 1;
        if self.failure.is_some() {
            return;
        }
        let (inputs, aux) = (&self.inputs, &self.aux);
        let value = |l: LinearCombination<Scalar>| lc::eval(&l, inputs, aux, Trackers::none());
        let abc = (|| {
            Ok::<_, String>((
                value(a(LinearCombination::zero()))?,
                value(b(LinearCombination::zero()))?,
                value(c(LinearCombination::zero()))?,
            ))
        })();
        self.failure = match abc {
            Ok((a, b, c)) if a * b == c => None,
            Ok(_) => Some(Failure::Unsatisfied {
                index,
                name: self.full_name(annotation().into()),
            }),
            Err(variable) => Some(Failure::Unallocated {
                constraint: index,
                variable,
            }),
        };
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.marks.push(self.path.len());
        if self.failure.is_none() {
            if !self.path.is_empty() {
                self.path.push('/');
            }
            self.path.push_str(&name_fn().into());
        }
    }

    fn pop_namespace(&mut self) {
        let mark = self
            .marks
            .pop()
            .expect("pop_namespace without a matching push_namespace");
        self.path.truncate(mark);
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Runs the circuit with its assignment and checks every constraint, in order.
///
/// Errors with [`SynthError::Unsatisfied`] naming the first failing constraint by index and
/// full namespace path (e.g. `sha256/block 0/compression/…`), or with the circuit's own
/// synthesis error. The input-consistency rows always hold (`x·0 = 0`) and are not run.
pub fn check_satisfied<C: Circuit<Scalar>>(circuit: C) -> Result<(), SynthError> {
    let mut cs = CheckingCs::new();
    circuit.synthesize(&mut cs)?;
    match cs.failure {
        None => Ok(()),
        Some(Failure::Unsatisfied { index, name }) => Err(SynthError::Unsatisfied {
            index,
            name: Some(name),
        }),
        Some(Failure::Unallocated {
            constraint,
            variable,
        }) => Err(SynthError::UnallocatedVariable {
            constraint,
            variable,
        }),
    }
}
