//! Recording filecoin-proofs' circuits the way their parameters were made.
//!
//! A circuit that finds `CS::is_extensible()` (the fallback PoSt circuit) synthesizes chunks
//! into fresh `CS::new()` systems and merges them with `extend`; otherwise it synthesizes
//! sequentially. Parameters, the ceremony's and bellperson's generator's alike, come from the
//! sequential path: bellperson's `KeypairAssembly` refuses extension on purpose, so that the
//! key fixes one variable order. [`Sequential`] gives cuzk's recorder the same view, so a
//! PCE's columns line up with the parameter file's queries by construction. Witnesses are
//! synthesized on the extending path (cuzk-synth's systems follow bellperson's extension
//! contract), which parallelizes the chunks and yields the same assignment order.

use bellpepper_core::{Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;

/// Runs the circuit on a constraint system that says it is not extensible.
pub(crate) struct Sequential<C>(pub C);

impl<C: Circuit<Fr>> Circuit<Fr> for Sequential<C> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.0.synthesize(&mut Plain(cs))
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
    fn extending_witness_matches_sequential_record() {
        let pce = cuzk_synth::Pce::record(Sequential(Chunked)).unwrap();
        assert_eq!(pce.num_inputs, 3);
        assert_eq!(pce.num_aux, 2);
        assert_eq!(cuzk_synth::Pce::record(Chunked).unwrap(), pce);
        let w = pce.synthesize_witness(Chunked).unwrap();
        assert_eq!(w.inputs, [Fr::ONE, Fr::from(10), Fr::from(11)]);
        assert_eq!(w.aux, [Fr::from(10), Fr::from(11)]);
        pce.check_witness(&w).unwrap();
    }

    /// The real case: the 2KiB WindowPoSt circuit (one chunk per sector) records the same
    /// matrices on its extending path as on the sequential one its parameters come from.
    #[test]
    fn fallback_post_records_alike_on_both_paths() {
        use filecoin_proofs::{SectorShape2KiB, SECTOR_SIZE_2_KIB};
        use storage_proofs_core::compound_proof::CompoundProof;
        use storage_proofs_post::fallback::FallbackPoStCompound;

        let config =
            filecoin_proofs_api::RegisteredPoStProof::StackedDrgWindow2KiBV1_2.as_v1_config();
        assert_eq!(u64::from(config.sector_size), SECTOR_SIZE_2_KIB);
        let pp = filecoin_proofs::parameters::window_post_public_params::<SectorShape2KiB>(&config)
            .unwrap();
        let blank = || FallbackPoStCompound::<SectorShape2KiB>::blank_circuit(&pp);
        let sequential = cuzk_synth::Pce::record(Sequential(blank())).unwrap();
        assert!(sequential.num_constraints > 0);
        assert_eq!(cuzk_synth::Pce::record(blank()).unwrap(), sequential);
    }
}
