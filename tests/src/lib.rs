//! Shared helpers of the cross-crate tests: moving keys and proofs between cuzk and
//! bellperson through their byte formats (which is what interoperability means), and
//! small circuit fixtures; reaching a spawned daemon (`daemon`).

pub mod daemon;

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::{Bls12, Scalar};
use cuzk_groth16::{Parameters, Proof, VerifyingKey};
use cuzk_synth::Pce;

/// bellperson's parameters over BLS12-381.
pub type BpParameters = bellperson::groth16::Parameters<Bls12>;
/// bellperson's proof over BLS12-381.
pub type BpProof = bellperson::groth16::Proof<Bls12>;
/// bellperson's verifying key over BLS12-381.
pub type BpVerifyingKey = bellperson::groth16::VerifyingKey<Bls12>;

/// Serialises cuzk parameters and loads them in bellperson (fully checked).
pub fn params_to_bellperson(params: &Parameters) -> BpParameters {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("writing to memory");
    BpParameters::read(&bytes[..], true).expect("bellperson loads cuzk parameters")
}

/// Serialises bellperson parameters and loads them in cuzk (fully checked).
pub fn params_from_bellperson(params: &BpParameters) -> Parameters {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("writing to memory");
    Parameters::read(&bytes[..], true).expect("cuzk loads bellperson parameters")
}

/// Serialises a cuzk verifying key and loads it in bellperson.
pub fn vk_to_bellperson(vk: &VerifyingKey) -> BpVerifyingKey {
    let mut bytes = Vec::new();
    vk.write(&mut bytes).expect("writing to memory");
    BpVerifyingKey::read(&bytes[..]).expect("bellperson loads a cuzk verifying key")
}

/// A cuzk proof as bellperson reads it from its 192 bytes.
pub fn proof_to_bellperson(proof: &Proof) -> BpProof {
    BpProof::read(&proof.to_bytes()[..]).expect("bellperson reads a cuzk proof")
}

/// A bellperson proof as cuzk reads it from its 192 bytes.
pub fn proof_from_bellperson(proof: &BpProof) -> Proof {
    let mut bytes = Vec::new();
    proof.write(&mut bytes).expect("writing to memory");
    Proof::from_bytes(&bytes).expect("cuzk reads a bellperson proof")
}

/// The bytes of a bellperson proof.
pub fn bellperson_proof_bytes(proof: &BpProof) -> Vec<u8> {
    let mut bytes = Vec::new();
    proof.write(&mut bytes).expect("writing to memory");
    bytes
}

/// The bytes of a parameter set in the shared file format.
pub fn params_bytes(params: &Parameters) -> Vec<u8> {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("writing to memory");
    bytes
}

/// The bytes of bellperson parameters.
pub fn bellperson_params_bytes(params: &BpParameters) -> Vec<u8> {
    let mut bytes = Vec::new();
    params.write(&mut bytes).expect("writing to memory");
    bytes
}

/// A circuit plus one extra row for each aux variable no row mentions, so that it has a
/// Groth16 key (a key cannot commit to an unconstrained variable). The extra rows
/// alternate between `x·0 = 0` (x in A) and `0·x = 0` (x in B), so both densities vary.
///
/// The circuit runs on a [`Sequential`] view of the constraint system, so that every
/// system (bellperson's included) sees the same sequential synthesis.
#[derive(Clone, Debug)]
pub struct Keyed<C> {
    inner: C,
    unconstrained: Vec<usize>,
}

impl<C: Circuit<Scalar> + Clone> Keyed<C> {
    /// Finds the circuit's unconstrained aux variables by recording it once.
    pub fn new(inner: C) -> Self {
        // Recorded exactly as it will be synthesized: sequentially, with nothing added.
        let bare = Keyed {
            inner: inner.clone(),
            unconstrained: Vec::new(),
        };
        let pce = Pce::record(bare).expect("recording the circuit");
        let mut used = vec![false; pce.num_aux];
        for m in [&pce.a, &pce.b, &pce.c] {
            for &col in &m.cols {
                if let Some(aux) = (col as usize).checked_sub(pce.num_inputs) {
                    used[aux] = true;
                }
            }
        }
        let unconstrained = (0..pce.num_aux).filter(|&i| !used[i]).collect();
        Keyed {
            inner,
            unconstrained,
        }
    }

    /// The wrapped circuit.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The wrapped circuit, mutably (its rows keep their indices: the extra rows follow).
    pub fn inner_mut(&mut self) -> &mut C {
        &mut self.inner
    }

    /// How many rows were added.
    pub fn num_added_rows(&self) -> usize {
        self.unconstrained.len()
    }
}

impl<C: Circuit<Scalar>> Circuit<Scalar> for Keyed<C> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.inner.synthesize(&mut Sequential(&mut *cs))?;
        for (k, &i) in self.unconstrained.iter().enumerate() {
            let v = Variable::new_unchecked(Index::Aux(i));
            if k % 2 == 0 {
                cs.enforce(
                    || format!("keep aux {i} (A)"),
                    |lc| lc + v,
                    |lc| lc,
                    |lc| lc,
                );
            } else {
                cs.enforce(
                    || format!("keep aux {i} (B)"),
                    |lc| lc,
                    |lc| lc + v,
                    |lc| lc,
                );
            }
        }
        Ok(())
    }
}

/// A constraint system seen as not extensible: circuits that would synthesize
/// sub-circuits into fresh systems and `extend` with them synthesize them in place
/// instead. bellperson's `extend` expects each fresh system to start with its own ONE
/// input, which circuits written for cuzk-synth's systems do not allocate.
#[derive(Debug)]
pub struct Sequential<'a, CS>(pub &'a mut CS);

impl<CS: ConstraintSystem<Scalar>> ConstraintSystem<Scalar> for Sequential<'_, CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc(annotation, f)
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
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

    fn get_root(&mut self) -> &mut Self {
        self
    }

    fn is_witness_generator(&self) -> bool {
        self.0.is_witness_generator()
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.0.extend_inputs(new_inputs)
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.0.extend_aux(new_aux)
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.0.allocate_empty(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.0.allocate_empty_inputs(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.0.allocate_empty_aux(n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        self.0.inputs_slice()
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.0.aux_slice()
    }
}
