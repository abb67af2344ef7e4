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
fn product_row(m: &Csr, w: &Columns<'_>, r: usize, minus_one: &Scalar) -> Scalar {
    let (start, end) = (m.row_ptr[r] as usize, m.row_ptr[r + 1] as usize);
    let mut acc = Scalar::ZERO;
    for (&col, coeff) in m.cols[start..end].iter().zip(&m.vals[start..end]) {
        let x = w.get(col);
        // A field multiplication costs several times the comparisons that avoid it: real
        // circuits' coefficients are mostly ±1, and their values mostly bits.
        if *coeff == Scalar::ONE {
            acc += x;
        } else if coeff == minus_one {
            acc -= x;
        } else if *x == Scalar::ONE {
            acc += coeff;
        } else if *x != Scalar::ZERO {
            acc += *x * coeff;
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
    /// a, b, c for one witness (rayon parallel), checking the witness's shape.
    pub fn evaluate(&self, w: &Witness) -> Result<Evaluations, SynthError> {
        self.check_witness_shape(w)?;
        let cols = Columns {
            inputs: &w.inputs,
            aux: &w.aux,
        };
        let minus_one = -Scalar::ONE;
        let rows = self.num_rows();
        // Collecting writes each entry once, where filling a zeroed vector writes it twice.
        let product = |m: &Csr| {
            let mut out = Vec::with_capacity(rows);
            (0..rows)
                .into_par_iter()
                .with_min_len(MIN_ROWS_PER_TASK)
                .map(|r| product_row(m, &cols, r, &minus_one))
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
        self.check_eval_lengths(a.len(), b.len(), c.len())?;
        let cols = Columns {
            inputs: &w.inputs,
            aux: &w.aux,
        };
        let minus_one = -Scalar::ONE;
        for (m, out) in [(&self.a, a), (&self.b, b), (&self.c, c)] {
            out.par_iter_mut()
                .with_min_len(MIN_ROWS_PER_TASK)
                .enumerate()
                .for_each(|(r, o)| *o = product_row(m, &cols, r, &minus_one));
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
        let minus_one = -Scalar::ONE;
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
                let x = product_row(&self.a, &cols, r, &minus_one);
                let y = product_row(&self.b, &cols, r, &minus_one);
                let z = product_row(&self.c, &cols, r, &minus_one);
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
    use cuzk_field::Scalar;
    use ff::Field;

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
