//! The system the hybrid witness is made in: a witness-only system whose vectors the native
//! parts append to directly.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use cuzk_synth::Witness;

/// A witness-only constraint system over a caller's [`Witness`], as `cuzk_synth::WitnessCs`
/// (assignments recorded, constraints ignored), but lending its vectors: the native SHA-256
/// values are written straight into `aux` rather than copied in from a scratch vector (16.7 MB
/// per label).
pub(crate) struct Replay<'w> {
    pub(crate) w: &'w mut Witness,
}

impl ConstraintSystem<Scalar> for Replay<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.w.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.w.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(
            self.w.inputs.len() - 1,
        )))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
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

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.w.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.w.aux.extend_from_slice(new_aux);
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.w.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.w.aux
    }
}
