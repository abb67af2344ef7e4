//! One synthesis that records the circuit's matrices and its witness together, for a
//! circuit seen for the first time: [`crate::Pce::record_with_witness`].
//!
//! Every value closure runs once; the recording half is given the value it already has.
//! It reports itself as no witness generator, so that circuits with a fast witness-only path
//! still enforce every constraint here.

use crate::record::RecordingCs;
use crate::WitnessCs;
use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;

/// A [`RecordingCs`] and a [`WitnessCs`] fed by the same synthesis.
pub(crate) struct PairedCs {
    pub(crate) record: RecordingCs,
    pub(crate) witness: WitnessCs,
}

impl PairedCs {
    /// A system for a whole circuit: input 0 is the constant ONE in both halves.
    pub(crate) fn with_one() -> PairedCs {
        PairedCs {
            record: RecordingCs::with_one(),
            witness: WitnessCs::with_one(),
        }
    }
}

impl ConstraintSystem<Scalar> for PairedCs {
    type Root = Self;

    fn new() -> Self {
        PairedCs {
            record: RecordingCs::new(),
            witness: WitnessCs::new(),
        }
    }

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let var = self.witness.alloc(annotation, || Ok(value))?;
        let recorded = self.record.alloc(|| "", || Ok(value))?;
        debug_assert_eq!(var, recorded, "both halves number variables alike");
        Ok(var)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let value = f()?;
        let var = self.witness.alloc_input(annotation, || Ok(value))?;
        let recorded = self.record.alloc_input(|| "", || Ok(value))?;
        debug_assert_eq!(var, recorded, "both halves number variables alike");
        Ok(var)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.record.enforce(annotation, a, b, c);
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
        self.record.extend(&other.record);
        self.witness.extend(&other.witness);
    }
}
