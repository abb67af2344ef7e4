//! The oracle of the native tests: bellpepper's gadget on the same inputs, and a system that
//! replays native values into it so that its constraints judge them.
#![allow(dead_code)]

use bellpepper::gadgets::sha256;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::Scalar;
use cuzk_native::{Bit, Digest};
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The scalar of a bit's variable (a negated bit's variable holds the negation's opposite).
pub fn variable_value(b: Bit) -> Option<Scalar> {
    match b {
        Bit::Constant(_) => None,
        Bit::Is(v) => Some(Scalar::from(u64::from(v))),
        Bit::Not(v) => Some(Scalar::from(u64::from(!v))),
    }
}

/// The inputs as the gadget's `Boolean`s, their variables allocated in `cs` in order.
pub fn allocate<CS: ConstraintSystem<Scalar>>(cs: &mut CS, input: &[Bit]) -> Vec<Boolean> {
    input
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let mut alloc = |v| {
                AllocatedBit::alloc(cs.namespace(|| format!("input {i}")), Some(v))
                    .expect("input bit")
            };
            match b {
                Bit::Constant(v) => Boolean::Constant(v),
                Bit::Is(v) => Boolean::Is(alloc(v)),
                Bit::Not(v) => Boolean::Is(alloc(!v)).not(),
            }
        })
        .collect()
}

/// The native side of [`generic`]: the inputs' variables, then the hash's aux.
pub fn native(input: &[Bit], block: bool) -> (Vec<Scalar>, Digest) {
    let mut aux: Vec<Scalar> = input.iter().filter_map(|&b| variable_value(b)).collect();
    let digest = if block {
        cuzk_native::sha256_block_no_padding(input, &mut aux)
    } else {
        cuzk_native::sha256(input, &mut aux)
    }
    .expect("native hash");
    (aux, digest)
}

/// The gadget (`sha256`, or `sha256_block_no_padding` when `block`) on `input` in `cs`.
pub fn generic<CS: ConstraintSystem<Scalar>>(
    cs: &mut CS,
    input: &[Bit],
    block: bool,
) -> Vec<Boolean> {
    let bits = allocate(cs, input);
    let ns = cs.namespace(|| "hash");
    if block {
        sha256::sha256_block_no_padding(ns, &bits)
    } else {
        sha256::sha256(ns, &bits)
    }
    .expect("generic hash")
}

/// Panics unless the gadget's output bits are the native digest's: same form, same
/// value, same aux variable.
pub fn assert_same_output(generic: &[Boolean], digest: &Digest) {
    assert_eq!(generic.len(), 256);
    for (i, g) in generic.iter().enumerate() {
        let (form, index) = match g {
            Boolean::Constant(v) => (Bit::Constant(*v), None),
            Boolean::Is(a) => (Bit::Is(a.get_value().unwrap()), Some(a.get_variable())),
            Boolean::Not(a) => (Bit::Not(!a.get_value().unwrap()), Some(a.get_variable())),
        };
        assert_eq!(digest.bit(i), form, "output bit {i}");
        let index = index.map(|v| match v.get_unchecked() {
            Index::Aux(k) => k,
            Index::Input(k) => panic!("output bit {i} is input {k}"),
        });
        assert_eq!(digest.aux_index(i), index, "output bit {i}'s variable");
    }
}

/// Random input bits: `bytes` bytes, the forms drawn by `mode` (0: all variables, 1: all
/// constants, 2: any mix, 3: runs of constants and variables as Filecoin's labels have).
pub fn random_input(seed: u64, bytes: usize, mode: u8) -> Vec<Bit> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut run_constant = false;
    (0..bytes * 8)
        .map(|_| {
            let v = rng.gen::<bool>();
            let form = match mode {
                0 => 1,
                1 => 0,
                2 => rng.gen_range(0..3),
                _ => {
                    if rng.gen_ratio(1, 40) {
                        run_constant = !run_constant;
                    }
                    if run_constant {
                        0
                    } else if rng.gen_ratio(1, 20) {
                        2
                    } else {
                        1
                    }
                }
            };
            match form {
                0 => Bit::Constant(v),
                1 => Bit::Is(v),
                _ => Bit::Not(v),
            }
        })
        .collect()
}

/// Bits, most significant first, as bytes.
pub fn bytes_of(bits: &[Bit]) -> Vec<u8> {
    bits.chunks(8)
        .map(|c| {
            c.iter()
                .fold(0u8, |acc, b| (acc << 1) | u8::from(b.value()))
        })
        .collect()
}

/// The gadget run with its allocations' values taken from `aux` instead of its own.
#[derive(Debug)]
pub struct Replayed<'a> {
    pub input: &'a [Bit],
    pub aux: &'a [Scalar],
    pub block: bool,
}

impl Circuit<Scalar> for Replayed<'_> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut replay = Replay {
            cs,
            aux: self.aux,
            next: 0,
        };
        generic(&mut replay, self.input, self.block);
        assert_eq!(
            replay.next,
            self.aux.len(),
            "the gadget allocated fewer values"
        );
        Ok(())
    }
}

/// A system that hands the next replayed value to each allocation and passes everything
/// else to `cs`.
struct Replay<'a, CS> {
    cs: &'a mut CS,
    aux: &'a [Scalar],
    next: usize,
}

impl<CS: ConstraintSystem<Scalar>> ConstraintSystem<Scalar> for Replay<'_, CS> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, annotation: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let v = *self
            .aux
            .get(self.next)
            .ok_or(SynthesisError::AssignmentMissing)?;
        self.next += 1;
        self.cs.alloc(annotation, || Ok(v))
    }

    fn alloc_input<F, A, AR>(&mut self, annotation: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.cs.alloc_input(annotation, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.cs.enforce(annotation, a, b, c);
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.cs.get_root().push_namespace(name);
    }

    fn pop_namespace(&mut self) {
        self.cs.get_root().pop_namespace();
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// A bit's scalar flipped (0 ↔ 1).
pub fn flipped(x: Scalar) -> Scalar {
    Scalar::ONE - x
}
