//! The witness-only constraint system: assignments and nothing else.

use crate::{PackedAux, Witness};
use bellpepper_core::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use cuzk_field::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Witness-only constraint system: records assignments, ignores constraints.
///
/// `enforce` never calls its linear-combination closures, which is where most of a
/// circuit's synthesis time goes. It is a witness generator (circuits may write
/// assignments in bulk through `extend_aux`, `allocate_empty` and friends) and extensible
/// with bellperson's contract: [`ConstraintSystem::new`] is empty, a sub-circuit synthesized
/// into it allocates its own "temp ONE" first, and [`ConstraintSystem::extend`] drops that
/// input. [`WitnessCs::with_one`] and [`WitnessCs::with_capacity`] start a whole circuit's
/// system, input 0 being ONE.
///
/// A native witness generator (one that computes a gadget's values directly, as cuzk-native
/// does) appends to the vectors themselves through [`WitnessCs::witness_mut`], between the
/// gadgets it runs through the system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessCs {
    w: Witness,
    /// A spare witness's packed memory, for a generator that packs ([`WitnessCs::take_packed`]).
    spare_packed: Option<Box<PackedAux>>,
}

impl WitnessCs {
    /// A system for a whole circuit: input 0 is the constant ONE.
    pub fn with_one() -> WitnessCs {
        WitnessCs::with_capacity(1, 0)
    }

    /// A system for a whole circuit (input 0 is ONE) with room for `num_inputs` inputs (ONE
    /// included) and `num_aux` aux variables, so that a circuit of known shape never
    /// reallocates.
    pub fn with_capacity(num_inputs: usize, num_aux: usize) -> WitnessCs {
        let mut inputs = Vec::with_capacity(num_inputs.max(1));
        inputs.push(Scalar::ONE);
        WitnessCs::of(inputs, Vec::with_capacity(num_aux))
    }

    /// Like [`WitnessCs::with_capacity`], in the memory of `spare`, an earlier witness no
    /// longer needed: its values are dropped, its allocations kept. A
    /// service making witnesses of one shape back to back then neither maps fresh pages nor
    /// gives them back for each one, both costly at hundreds of megabytes. A spare too small
    /// is freed and exact room allocated instead.
    pub fn reusing(spare: Witness, num_inputs: usize, num_aux: usize) -> WitnessCs {
        let mut inputs = recycled(spare.inputs, num_inputs.max(1));
        inputs.push(Scalar::ONE);
        let mut cs = WitnessCs::of(inputs, recycled(spare.aux, num_aux));
        cs.spare_packed = spare.packed;
        cs
    }

    /// Like [`WitnessCs::reusing`], for a generator that packs most of the aux assignment
    /// ([`WitnessCs::take_packed`], then [`Witness::packed`]) and appends only a few values
    /// one by one: no room is made for `num_aux` values, and a large spare aux vector is freed.
    pub fn reusing_for_packing(spare: Witness, num_inputs: usize) -> WitnessCs {
        let mut inputs = recycled(spare.inputs, num_inputs.max(1));
        inputs.push(Scalar::ONE);
        let mut cs = WitnessCs::of(inputs, Vec::new());
        cs.spare_packed = spare.packed;
        cs
    }

    /// An empty packed assignment, in a spare witness's packed memory when there was one.
    pub fn take_packed(&mut self) -> PackedAux {
        let mut p = self.spare_packed.take().map(|b| *b).unwrap_or_default();
        p.clear();
        p
    }

    fn of(inputs: Vec<Scalar>, aux: Vec<Scalar>) -> WitnessCs {
        WitnessCs {
            w: Witness::new(inputs, aux),
            spare_packed: None,
        }
    }

    /// The assignments so far, to append to directly: a value pushed here is the next
    /// variable, exactly as if allocated through the system.
    pub fn witness_mut(&mut self) -> &mut Witness {
        &mut self.w
    }

    /// The assignments.
    pub fn into_witness(self) -> Witness {
        self.w
    }
}

/// `v` emptied, when it has room for `n` values; else a new vector of exactly that room (not
/// `v` grown, which could double it past what its owner accounted for), its pages mapped by
/// every core when it is large: a circuit then fills it in without a page fault per 4 KiB on
/// its one thread (about a second per 4 GB).
fn recycled(mut v: Vec<Scalar>, n: usize) -> Vec<Scalar> {
    if v.capacity() < n {
        drop(v);
        let mut fresh = Vec::with_capacity(n);
        if n >= PARALLEL_GROW {
            grow(&mut fresh, n);
            fresh.clear();
        }
        return fresh;
    }
    v.clear();
    v
}

/// Bulk allocations from this many variables on are zeroed by every core: a circuit that
/// writes its assignment in bulk (hundreds of megabytes at 2^24 variables) would otherwise wait
/// for one thread to touch every page first.
const PARALLEL_GROW: usize = 1 << 16;

/// Grows `v` by `n` zeros and returns the new tail.
fn grow(v: &mut Vec<Scalar>, n: usize) -> &mut [Scalar] {
    let start = v.len();
    if n < PARALLEL_GROW {
        v.resize(start + n, Scalar::ZERO);
    } else {
        // An indexed parallel extend writes the new elements in place, in parallel.
        v.reserve(n);
        v.par_extend(rayon::iter::repeat_n(Scalar::ZERO, n));
    }
    &mut v[start..]
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    /// An empty system (no ONE), as bellperson's: see [`WitnessCs`].
    fn new() -> Self {
        WitnessCs::of(Vec::new(), Vec::new())
    }

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

    fn is_extensible() -> bool {
        true
    }

    fn extend(&mut self, other: &Self) {
        // `other.w.inputs[0]` is its temp ONE, our ONE.
        self.w
            .inputs
            .extend_from_slice(other.w.inputs.get(1..).unwrap_or_default());
        self.w.aux.extend_from_slice(&other.w.aux);
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

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        (
            grow(&mut self.w.aux, aux_n),
            grow(&mut self.w.inputs, inputs_n),
        )
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        grow(&mut self.w.inputs, n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        grow(&mut self.w.aux, n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.w.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.w.aux
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reusing_keeps_room_that_fits_and_replaces_room_that_does_not() {
        let roomy = Witness {
            inputs: vec![Scalar::from(5); 4],
            aux: Vec::with_capacity(1000),
            packed: None,
        };
        let aux_at = roomy.aux.as_ptr();
        let w = WitnessCs::reusing(roomy, 3, 500).into_witness();
        assert_eq!(w.inputs, vec![Scalar::ONE]);
        assert!(w.aux.is_empty());
        assert_eq!(w.aux.as_ptr(), aux_at, "the spare's memory is kept");
        // Too small: exact room, not the spare doubled (its owner accounted for 1000).
        let small = Witness {
            inputs: Vec::new(),
            aux: vec![Scalar::ONE; 600],
            packed: None,
        };
        let w = WitnessCs::reusing(small, 1, 1000).into_witness();
        assert!(w.aux.is_empty());
        assert!(
            (1000..1200).contains(&w.aux.capacity()),
            "{}",
            w.aux.capacity()
        );
    }

    #[test]
    fn bulk_allocations_are_zeroed_tails_large_or_small() {
        for n in [0, 3, PARALLEL_GROW - 1, PARALLEL_GROW, PARALLEL_GROW + 5] {
            let mut cs = WitnessCs::with_one();
            cs.extend_aux(&[Scalar::ONE, Scalar::ONE]);
            let (aux, inputs) = cs.allocate_empty(n, 2);
            assert_eq!((aux.len(), inputs.len()), (n, 2));
            assert!(aux
                .iter()
                .chain(inputs.iter())
                .all(|x| bool::from(x.is_zero())));
            aux.iter_mut().for_each(|x| *x = Scalar::ONE);
            let w = cs.into_witness();
            assert_eq!(w.aux.len(), n + 2);
            assert!(w.aux.iter().all(|x| *x == Scalar::ONE));
            assert_eq!(w.inputs, vec![Scalar::ONE, Scalar::ZERO, Scalar::ZERO]);
        }
    }
}
