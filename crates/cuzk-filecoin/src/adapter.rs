//! Circuit wrappers that give filecoin-proofs' circuits bellperson's contract for
//! extensible constraint systems on top of cuzk's.
//!
//! A circuit that finds `CS::is_extensible()` (the fallback PoSt circuit) synthesizes chunks
//! into fresh `CS::new()` systems, allocates a "temp ONE" as each one's first input and
//! merges them with `extend`, which drops the sub-system's input 0. bellperson's `new()` is
//! empty, so the dropped input is the temp ONE. cuzk-synth's `new()` already holds ONE, so
//! its `extend` keeps the temp ONE as a spurious public input. Until cuzk-synth follows
//! bellperson there, [`Sequential`] hides extensibility (the circuit takes its sequential
//! path, used for recording) and [`Parallel`] keeps it, dropping both leading inputs of a
//! sub-system (used for witness synthesis, which the chunks parallelize). Both produce the
//! variables in the same order.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

/// Runs the circuit on a constraint system that says it is not extensible.
pub(crate) struct Sequential<C>(pub C);

impl<C: Circuit<Fr>> Circuit<Fr> for Sequential<C> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(&mut Plain(cs))
    }
}

/// Runs the circuit on a witness-generating constraint system with bellperson's extension
/// contract. Only for witness generators: sub-systems are merged through their slices.
pub(crate) struct Parallel<C>(pub C);

impl<C: Circuit<Fr>> Circuit<Fr> for Parallel<C> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(&mut Ext::Caller(cs))
    }
}

/// Forwards everything except extensibility.
struct Plain<'a, CS>(&'a mut CS);

impl<CS: ConstraintSystem<Fr>> ConstraintSystem<Fr> for Plain<'_, CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.0.enforce(annotation, a, b, c)
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.0.get_root().push_namespace(name_fn)
    }

    fn pop_namespace(&mut self) {
        self.0.get_root().pop_namespace()
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        false
    }

    fn is_witness_generator(&self) -> bool {
        self.0.is_witness_generator()
    }

    fn extend_inputs(&mut self, new_inputs: &[Fr]) {
        self.0.extend_inputs(new_inputs)
    }

    fn extend_aux(&mut self, new_aux: &[Fr]) {
        self.0.extend_aux(new_aux)
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        self.0.allocate_empty(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Fr] {
        self.0.allocate_empty_inputs(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Fr] {
        self.0.allocate_empty_aux(n)
    }

    fn inputs_slice(&self) -> &[Fr] {
        self.0.inputs_slice()
    }

    fn aux_slice(&self) -> &[Fr] {
        self.0.aux_slice()
    }
}

/// The caller's system, or a sub-system a circuit made with `new()`.
enum Ext<'a, CS> {
    Caller(&'a mut CS),
    Sub(CS),
}

impl<CS> Ext<'_, CS> {
    fn cs(&mut self) -> &mut CS {
        match self {
            Ext::Caller(cs) => cs,
            Ext::Sub(cs) => cs,
        }
    }

    fn cs_ref(&self) -> &CS {
        match self {
            Ext::Caller(cs) => cs,
            Ext::Sub(cs) => cs,
        }
    }
}

impl<CS: ConstraintSystem<Fr>> ConstraintSystem<Fr> for Ext<'_, CS> {
    type Root = Self;

    fn new() -> Self {
        Ext::Sub(CS::new())
    }

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.cs().alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.cs().alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.cs().enforce(annotation, a, b, c)
    }

    fn push_namespace<NR, N>(&mut self, name_fn: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.cs().get_root().push_namespace(name_fn)
    }

    fn pop_namespace(&mut self) {
        self.cs().get_root().pop_namespace()
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        // A sub-system holds cuzk's ONE, then the circuit's temp ONE: bellperson drops the
        // latter (its sub-systems start empty), so both go.
        let inputs = other.cs_ref().inputs_slice();
        let aux = other.cs_ref().aux_slice();
        let cs = self.cs();
        cs.extend_inputs(inputs.get(2..).unwrap_or_default());
        cs.extend_aux(aux);
    }

    fn is_witness_generator(&self) -> bool {
        self.cs_ref().is_witness_generator()
    }

    fn extend_inputs(&mut self, new_inputs: &[Fr]) {
        self.cs().extend_inputs(new_inputs)
    }

    fn extend_aux(&mut self, new_aux: &[Fr]) {
        self.cs().extend_aux(new_aux)
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        self.cs().allocate_empty(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Fr] {
        self.cs().allocate_empty_inputs(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Fr] {
        self.cs().allocate_empty_aux(n)
    }

    fn inputs_slice(&self) -> &[Fr] {
        self.cs_ref().inputs_slice()
    }

    fn aux_slice(&self) -> &[Fr] {
        self.cs_ref().aux_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;

    /// Two chunks the way the fallback PoSt circuit builds them: each in a fresh system with
    /// a temp ONE, one public input and one aux, a constraint tying them.
    struct Chunked;

    impl Circuit<Fr> for Chunked {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let chunk = |cs: &mut CS, i: u64| -> Result<(), SynthesisError> {
                let x = cs.alloc_input(|| "x", || Ok(Fr::from(i + 10)))?;
                let y = cs.alloc(|| "y", || Ok(Fr::from(i + 10)))?;
                cs.enforce(|| "x = y", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + y);
                Ok(())
            };
            if CS::is_extensible() {
                for i in 0..2 {
                    let mut sub = CS::new();
                    sub.alloc_input(|| "temp ONE", || Ok(Fr::ONE))?;
                    chunk(&mut sub, i)?;
                    cs.extend(&sub);
                }
            } else {
                for i in 0..2 {
                    chunk(cs, i)?;
                }
            }
            Ok(())
        }
    }

    #[test]
    fn parallel_witness_matches_sequential_record() {
        let pce = cuzk_synth::Pce::record(Sequential(Chunked)).unwrap();
        assert_eq!(pce.num_inputs, 3);
        assert_eq!(pce.num_aux, 2);
        let w = pce.synthesize_witness(Parallel(Chunked)).unwrap();
        assert_eq!(w.inputs, [Fr::ONE, Fr::from(10), Fr::from(11)]);
        assert_eq!(w.aux, [Fr::from(10), Fr::from(11)]);
        pce.check_witness(&w).unwrap();
    }
}
