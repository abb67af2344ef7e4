//! Sparse matrix–vector products `A·w`, `B·w`, `C·w` and the satisfiability check.

use super::{Csr, Pce};
use crate::{Evaluations, SynthError, Witness};
use cuzk_field::{FrRepr, Scalar};
use ff::Field;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Smallest number of rows per parallel task: large enough to amortise scheduling, small
/// enough that the heavy rows of a circuit (long packing sums) spread over all threads.
const MIN_ROWS_PER_TASK: usize = 1024;

/// The witness as one virtual vector: column `k < inputs.len()` is an input, the rest aux.
struct Columns<'a> {
    inputs: &'a [Scalar],
    aux: &'a [Scalar],
}

impl Columns<'_> {
    #[inline(always)]
    fn get(&self, col: u32) -> &Scalar {
        let col = col as usize;
        match col.checked_sub(self.inputs.len()) {
            Some(j) => &self.aux[j],
            None => &self.inputs[col],
        }
    }
}

/// Row `r` of `m·w`.
#[inline]
fn product_row(m: &Csr, w: &Columns<'_>, r: usize) -> Scalar {
    let (start, end) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
    let mut acc = Scalar::ZERO;
    for (&col, &k) in m.cols[start..end].iter().zip(&m.coeffs[start..end]) {
        let x = w.get(col);
        // A field multiplication costs several times the comparisons that avoid it: real
        // circuits' coefficients are mostly ±1 (table indices 0 and 1), and their values
        // mostly bits.
        match k {
            Csr::ONE_INDEX => acc += x,
            Csr::MINUS_ONE_INDEX => acc -= x,
            k => {
                let coeff = &m.table[k as usize];
                if *x == Scalar::ONE {
                    acc += coeff;
                } else if *x != Scalar::ZERO {
                    acc += *x * coeff;
                }
            }
        }
    }
    acc
}

/// Whether `x·y = z`, without the multiplication when a factor is 0 or 1 (most rows of real
/// circuits, whose values are mostly bits).
#[inline]
fn satisfied(x: &Scalar, y: &Scalar, z: &Scalar) -> bool {
    if bool::from(x.is_zero()) || bool::from(y.is_zero()) {
        bool::from(z.is_zero())
    } else if *x == Scalar::ONE {
        y == z
    } else if *y == Scalar::ONE {
        x == z
    } else {
        *x * y == *z
    }
}

impl Pce {
    /// a, b, c for one witness (rayon parallel), checking the witness's shape. A packed aux
    /// assignment ([`Witness::packed`]) is expanded first, here and in the two below.
    pub fn evaluate(&self, w: &Witness) -> Result<Evaluations, SynthError> {
        self.check_witness_shape(w)?;
        let w = &*w.unpacked();
        let cols = Columns {
            inputs: &w.inputs,
            aux: &w.aux,
        };
        let rows = self.num_rows();
        // Collecting writes each entry once, where filling a zeroed vector writes it twice.
        let product = |m: &Csr| {
            let mut out = Vec::with_capacity(rows);
            (0..rows)
                .into_par_iter()
                .with_min_len(MIN_ROWS_PER_TASK)
                .map(|r| product_row(m, &cols, r))
                .collect_into_vec(&mut out);
            out
        };
        Ok(Evaluations {
            a: product(&self.a),
            b: product(&self.b),
            c: product(&self.c),
        })
    }

    /// Like [`Pce::evaluate`], writing into caller buffers of `num_rows()` entries each
    /// (e.g. pinned host memory for a device transfer).
    pub fn evaluate_into(
        &self,
        w: &Witness,
        a: &mut [Scalar],
        b: &mut [Scalar],
        c: &mut [Scalar],
    ) -> Result<(), SynthError> {
        self.check_witness_shape(w)?;
        let w = &*w.unpacked();
        self.check_eval_lengths(a.len(), b.len(), c.len())?;
        let cols = Columns {
            inputs: &w.inputs,
            aux: &w.aux,
        };
        for (m, out) in [(&self.a, a), (&self.b, b), (&self.c, c)] {
            out.par_iter_mut()
                .with_min_len(MIN_ROWS_PER_TASK)
                .enumerate()
                .for_each(|(r, o)| *o = product_row(m, &cols, r));
        }
        Ok(())
    }

    /// Evaluates `w` into caller buffers in the device layout (blst's Montgomery limbs, as
    /// [`FrRepr::from`] makes them) and checks `a·b = c` in the same pass, so a GPU prover
    /// reads the witness once and never ships an unsatisfied witness to the device. The
    /// buffers may be longer than `num_rows()` (a power-of-two domain): the rest is zeroed.
    /// Errors with the first failing row.
    pub fn evaluate_checked_into(
        &self,
        w: &Witness,
        a: &mut [FrRepr],
        b: &mut [FrRepr],
        c: &mut [FrRepr],
    ) -> Result<(), SynthError> {
        self.check_witness_shape(w)?;
        let w = &*w.unpacked();
        let rows = self.num_rows();
        if a.len() < rows || a.len() != b.len() || a.len() != c.len() {
            return Err(SynthError::EvaluationShape {
                expected: rows,
                a: a.len(),
                b: b.len(),
                c: c.len(),
            });
        }
        let cols = Columns {
            inputs: &w.inputs,
            aux: &w.aux,
        };
        let first_failing = AtomicUsize::new(usize::MAX);
        let (a_rows, a_pad) = a.split_at_mut(rows);
        let (b_rows, b_pad) = b.split_at_mut(rows);
        let (c_rows, c_pad) = c.split_at_mut(rows);
        a_rows
            .par_iter_mut()
            .zip(b_rows.par_iter_mut())
            .zip(c_rows.par_iter_mut())
            .with_min_len(MIN_ROWS_PER_TASK)
            .enumerate()
            .for_each(|(r, ((ao, bo), co))| {
                let x = product_row(&self.a, &cols, r);
                let y = product_row(&self.b, &cols, r);
                let z = product_row(&self.c, &cols, r);
                if !satisfied(&x, &y, &z) {
                    first_failing.fetch_min(r, Ordering::Relaxed);
                }
                *ao = x.into();
                *bo = y.into();
                *co = z.into();
            });
        for pad in [a_pad, b_pad, c_pad] {
            pad.par_iter_mut().for_each(|e| *e = FrRepr::default());
        }
        match first_failing.into_inner() {
            usize::MAX => Ok(()),
            index => Err(SynthError::Unsatisfied { index, name: None }),
        }
    }

    /// Checks `a∘b = c` row by row; `eval` must be this PCE's evaluation of `w` (from
    /// [`Pce::evaluate`]). Errors with the index of the first failing row.
    pub fn check(&self, w: &Witness, eval: &Evaluations) -> Result<(), SynthError> {
        self.check_witness_shape(w)?;
        self.check_eval_lengths(eval.a.len(), eval.b.len(), eval.c.len())?;
        let failing = (0..self.num_rows())
            .into_par_iter()
            .with_min_len(MIN_ROWS_PER_TASK)
            .position_first(|i| eval.a[i] * eval.b[i] != eval.c[i]);
        match failing {
            None => Ok(()),
            Some(index) => Err(SynthError::Unsatisfied { index, name: None }),
        }
    }

    /// Evaluates `w` and checks it: [`Pce::evaluate`] then [`Pce::check`].
    pub fn check_witness(&self, w: &Witness) -> Result<(), SynthError> {
        let eval = self.evaluate(w)?;
        self.check(w, &eval)
    }

    fn check_eval_lengths(&self, a: usize, b: usize, c: usize) -> Result<(), SynthError> {
        let expected = self.num_rows();
        if a == expected && b == expected && c == expected {
            return Ok(());
        }
        Err(SynthError::EvaluationShape { expected, a, b, c })
    }
}

#[cfg(test)]
mod tests {
    use super::satisfied;
    use crate::{Csr, Pce, SynthError, Witness};
    use cuzk_field::{FrRepr, Scalar};
    use ff::Field;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Dense `rows × vars` matrices of coefficients drawn from `pool` (or zero), as a PCE
    /// whose last `inputs` rows are the input-consistency rows.
    fn dense_pce(
        rng: &mut ChaCha8Rng,
        pool: &[Scalar],
        constraints: usize,
        inputs: usize,
        aux: usize,
    ) -> (Pce, [Vec<Vec<Scalar>>; 3]) {
        let vars = inputs + aux;
        let mut dense = [(); 3].map(|_| {
            let mut rows: Vec<Vec<Scalar>> = (0..constraints)
                .map(|_| {
                    (0..vars)
                        .map(|_| match rng.gen_range(0..3) {
                            0 => pool[rng.gen_range(0..pool.len())],
                            _ => Scalar::ZERO,
                        })
                        .collect()
                })
                .collect();
            rows.extend((0..inputs).map(|_| vec![Scalar::ZERO; vars]));
            rows
        });
        for i in 0..inputs {
            dense[0][constraints + i][i] = Scalar::ONE;
        }
        let to_csr = |m: &Vec<Vec<Scalar>>| {
            let mut csr = Csr::with_capacity(m.len(), 0);
            for row in m {
                let entries: Vec<(u32, Scalar)> = (0..vars as u32)
                    .zip(row.iter().copied())
                    .filter(|(_, v)| *v != Scalar::ZERO)
                    .collect();
                csr.push_row(&entries);
            }
            csr
        };
        let pce = Pce {
            num_inputs: inputs,
            num_aux: aux,
            num_constraints: constraints,
            a: to_csr(&dense[0]),
            b: to_csr(&dense[1]),
            c: to_csr(&dense[2]),
        };
        (pce, dense)
    }

    #[test]
    fn many_distinct_coefficients_evaluate_as_the_dense_product() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut pool = vec![
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2),
            Scalar::from(1 << 20),
            -Scalar::from(3),
        ];
        pool.extend((0..60).map(|_| Scalar::random(&mut rng)));
        let (inputs, aux, constraints) = (3, 17, 3000);
        let (pce, dense) = dense_pce(&mut rng, &pool, constraints, inputs, aux);
        pce.validate().unwrap();
        assert!(pce.a.table.len() > 40, "{} distinct", pce.a.table.len());
        assert_eq!(pce.a.table[..2], [Scalar::ONE, -Scalar::ONE]);

        // Values: mostly 0, 1 and -1 (the evaluator's shortcuts), some random.
        let mut value = || match rng.gen_range(0..4) {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            2 => -Scalar::ONE,
            _ => Scalar::random(&mut rng),
        };
        let mut w = Witness {
            inputs: (0..inputs).map(|_| value()).collect(),
            aux: (0..aux).map(|_| value()).collect(),
            packed: None,
        };
        w.inputs[0] = Scalar::ONE;
        let all: Vec<Scalar> = w.inputs.iter().chain(&w.aux).copied().collect();
        let naive = dense.map(|m| {
            m.iter()
                .map(|row| row.iter().zip(&all).map(|(c, x)| *c * x).sum::<Scalar>())
                .collect::<Vec<Scalar>>()
        });

        let eval = pce.evaluate(&w).unwrap();
        assert_eq!(
            [&eval.a, &eval.b, &eval.c],
            [&naive[0], &naive[1], &naive[2]]
        );

        let rows = pce.num_rows();
        let mut into = [(); 3].map(|_| vec![Scalar::ZERO; rows]);
        let [a, b, c] = &mut into;
        pce.evaluate_into(&w, a, b, c).unwrap();
        assert_eq!(into, naive);

        let mut reprs = [(); 3].map(|_| vec![FrRepr { limbs: [7; 4] }; rows + 5]);
        let [a, b, c] = &mut reprs;
        let checked = pce.evaluate_checked_into(&w, a, b, c);
        for (got, want) in reprs.iter().zip(&naive) {
            let want: Vec<FrRepr> = want.iter().map(|&s| FrRepr::from(s)).collect();
            assert_eq!(got[..rows], want[..]);
            assert!(got[rows..].iter().all(|r| *r == FrRepr::default()));
        }
        let first_failing = (0..rows).find(|&r| naive[0][r] * naive[1][r] != naive[2][r]);
        let first_failing = first_failing.expect("a random witness fails some row");
        assert!(matches!(
            checked,
            Err(SynthError::Unsatisfied { index, .. }) if index == first_failing
        ));
        assert!(matches!(
            pce.check(&w, &eval),
            Err(SynthError::Unsatisfied { index, .. }) if index == first_failing
        ));
    }

    #[test]
    fn the_shortcut_check_agrees_with_the_product() {
        let values = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2),
            Scalar::from(3),
            Scalar::from(6),
        ];
        for x in &values {
            for y in &values {
                for z in &values {
                    assert_eq!(satisfied(x, y, z), *x * y == *z, "{x:?} {y:?} {z:?}");
                }
            }
        }
    }
}
