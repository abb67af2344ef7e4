//! A synthetic circuit shaped like Filecoin's PoRep, at any size: mostly boolean witness,
//! every variable in A, about a quarter of them in B.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use cuzk_field::Scalar;
use cuzk_synth::{Csr, Pce};
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;

/// Positions per independently seeded RNG stream: values can then be generated in
/// parallel and still depend on the seed alone, not on the number of threads.
const CHUNK: usize = 1 << 14;

/// A value is uniformly random when a 32-bit draw falls below this: probability 1/75 at
/// the three non-boolean positions out of four, so 1% of all values.
const RANDOM_BELOW: u32 = (u32::MAX as u64 / 75) as u32;

/// Stream of the public input's value, apart from every chunk's stream.
const INPUT_STREAM: u64 = u64::MAX;

/// A "PoRep-shaped" circuit of exactly `num_constraints` constraints (before Groth16's
/// input rows), built from `seed`.
///
/// Constraint `i` has its own aux `x_i`:
/// - at `i % 4 == 0`, `x_i` is boolean and the constraint is `x_i · x_i = x_i` (A, B and C
///   hold `x_i`);
/// - elsewhere it is `x_i · ONE = x_i`;
/// - one public input `p` (besides ONE) joins A and C of constraint 1 (constraint 0 when
///   there is only one): `(x_1 + p) · ONE = x_1 + p`.
///
/// So there are `n` aux variables, all in A; B holds ONE and the quarter at `i % 4 == 0`.
/// Values: at the non-boolean positions, one in 75 (1% of all) is a uniformly random field
/// element; every other value is 0 or 1 with equal probability. The shape depends only on
/// `num_constraints`, so one recorded evaluator serves every seed; the values (which
/// positions are random, and all the bits) come from the seed.
///
/// On a witness-generator constraint system the values are written in bulk, in parallel,
/// and no constraint is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticPoRep {
    /// Number of constraints.
    pub num_constraints: usize,
    /// Seed of the values.
    pub seed: u64,
}

impl SyntheticPoRep {
    /// The circuit of `num_constraints` constraints with values from `seed`.
    pub fn new(num_constraints: usize, seed: u64) -> SyntheticPoRep {
        SyntheticPoRep {
            num_constraints,
            seed,
        }
    }

    /// The public inputs (ONE excluded): the single input `p`.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        vec![self.input_value()]
    }

    /// A name for this circuit's shape, e.g. `synthetic-porep-1048576`, for keying recorded
    /// constraint evaluators.
    pub fn circuit_key(&self) -> String {
        format!("synthetic-porep-{}", self.num_constraints)
    }

    /// The circuit's recorded evaluator, written directly from the known shape: the same
    /// [`Pce`] that recording the circuit gives, in a fraction of the time and memory (at
    /// 2^27 constraints recording would build 2^27 constraint names).
    pub fn pce(&self) -> Pce {
        let n = self.num_constraints;
        let input_row = self.input_row();
        // Columns: ONE = 0, p = 1, x_i = 2 + i.
        let (one, p) = (0u32, 1u32);
        let x = |i: usize| 2 + i as u32;
        let rows = n + 2;
        let mut a = Csr::with_capacity(rows, n + 3);
        let mut b = Csr::with_capacity(rows, n + 2);
        let mut c = Csr::with_capacity(rows, n + 1);
        for i in 0..n {
            if i == input_row {
                // Inputs before aux within a row, as the recorder orders them.
                a.push_row(&[(p, Scalar::ONE), (x(i), Scalar::ONE)]);
                b.push_row(&[(one, Scalar::ONE)]);
                c.push_row(&[(p, Scalar::ONE), (x(i), Scalar::ONE)]);
            } else if i.is_multiple_of(4) {
                a.push_row(&[(x(i), Scalar::ONE)]);
                b.push_row(&[(x(i), Scalar::ONE)]);
                c.push_row(&[(x(i), Scalar::ONE)]);
            } else {
                a.push_row(&[(x(i), Scalar::ONE)]);
                b.push_row(&[(one, Scalar::ONE)]);
                c.push_row(&[(x(i), Scalar::ONE)]);
            }
        }
        // The input-consistency rows: A holds the input, B and C are empty.
        for input in [one, p] {
            a.push_row(&[(input, Scalar::ONE)]);
            b.push_row(&[]);
            c.push_row(&[]);
        }
        Pce {
            num_inputs: 2,
            num_aux: n,
            num_constraints: n,
            a,
            b,
            c,
        }
    }

    /// The aux values `x_0..x_n`, generated in parallel.
    pub fn aux_values(&self) -> Vec<Scalar> {
        let mut aux = vec![Scalar::ZERO; self.num_constraints];
        self.fill(&mut aux);
        aux
    }

    fn input_value(&self) -> Scalar {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(INPUT_STREAM);
        Scalar::random(&mut rng)
    }

    /// Index of the constraint that carries the public input.
    fn input_row(&self) -> usize {
        usize::from(self.num_constraints > 1)
    }

    fn fill(&self, aux: &mut [Scalar]) {
        aux.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(k, out)| fill_chunk(self.seed, k, out));
    }
}

/// Writes the values of positions `k·CHUNK ..` into `out`.
fn fill_chunk(seed: u64, k: usize, out: &mut [Scalar]) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(k as u64);
    let first = k * CHUNK;
    for (i, x) in out.iter_mut().enumerate() {
        let draw = rng.next_u64();
        let boolean_position = (first + i).is_multiple_of(4);
        *x = if !boolean_position && (draw >> 32) as u32 <= RANDOM_BELOW {
            Scalar::random(&mut rng)
        } else if draw & 1 == 1 {
            // Constants, not `Scalar::from`, which pays a Montgomery multiplication.
            Scalar::ONE
        } else {
            Scalar::ZERO
        };
    }
}

impl Circuit<Scalar> for SyntheticPoRep {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let n = self.num_constraints;
        let p = self.input_value();
        if cs.is_witness_generator() {
            // Only the assignment is wanted: skip the per-variable calls entirely.
            cs.extend_inputs(&[p]);
            let (aux, _) = cs.allocate_empty(n, 0);
            self.fill(aux);
            return Ok(());
        }
        let p = cs.alloc_input(|| "p", || Ok(p))?;
        let one = CS::one();
        let input_row = self.input_row();
        let mut values = vec![Scalar::ZERO; CHUNK.min(n)];
        for (k, first) in (0..n).step_by(CHUNK).enumerate() {
            let values = &mut values[..CHUNK.min(n - first)];
            fill_chunk(self.seed, k, values);
            for (offset, &value) in values.iter().enumerate() {
                let i = first + offset;
                let x: Variable = cs.alloc(|| format!("x {i}"), || Ok(value))?;
                if i == input_row {
                    cs.enforce(
                        || format!("x {i} + p"),
                        |lc| lc + x + p,
                        |lc| lc + one,
                        |lc| lc + x + p,
                    );
                } else if i.is_multiple_of(4) {
                    cs.enforce(
                        || format!("x {i} boolean"),
                        |lc| lc + x,
                        |lc| lc + x,
                        |lc| lc + x,
                    );
                } else {
                    cs.enforce(
                        || format!("x {i} copy"),
                        |lc| lc + x,
                        |lc| lc + one,
                        |lc| lc + x,
                    );
                }
            }
        }
        Ok(())
    }
}
