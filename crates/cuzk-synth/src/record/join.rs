//! Recording a circuit made of a common part and repeated blocks (PoRep's challenges) in
//! parallel runs, then joining them into the PCE a sequential recording gives.
//!
//! A circuit of this shape allocates and constrains its common part first, then each block
//! in turn, every block referring only to the common part and to itself. So a run with `k`
//! blocks records the common part (the same rows and variables every time) followed by `k`
//! blocks of equal shape; the common part alone is the circuit with no block. The join keeps
//! the common part once and appends each run's blocks, renumbering their own variables to
//! follow the blocks before them. It checks what it assumes: every run starts with exactly
//! the common part's rows, and every run's blocks have the same rows and variables per block.

use super::{Builder, RecordingCs, AUX_TAG};
use crate::SynthError;

/// Rows, inputs and aux variables of a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Counts {
    rows: usize,
    inputs: usize,
    aux: usize,
}

impl Counts {
    fn of(cs: &RecordingCs) -> Counts {
        Counts {
            rows: cs.num_constraints(),
            inputs: cs.num_inputs,
            aux: cs.num_aux,
        }
    }
}

/// Joins `runs` (each a recording and its number of blocks, in the circuit's order) onto
/// `common`, the recording of the common part alone.
pub(crate) fn join(
    mut common: RecordingCs,
    runs: Vec<(RecordingCs, usize)>,
) -> Result<RecordingCs, SynthError> {
    let differ = |reason: String| SynthError::RunsDiffer { reason };
    if let Some((constraint, variable)) = common.unallocated.take() {
        return Err(SynthError::UnallocatedVariable {
            constraint,
            variable,
        });
    }
    let base = Counts::of(&common);
    let mut per: Option<Counts> = None;
    for (j, (run, blocks)) in runs.iter().enumerate() {
        if let Some((constraint, variable)) = &run.unallocated {
            return Err(SynthError::UnallocatedVariable {
                constraint: *constraint,
                variable: variable.clone(),
            });
        }
        if *blocks == 0 {
            return Err(differ(format!("run {j} has no blocks")));
        }
        let c = Counts::of(run);
        let block = |whole: usize, part: usize, what: &str| -> Result<usize, SynthError> {
            whole
                .checked_sub(part)
                .filter(|d| d % blocks == 0)
                .map(|d| d / blocks)
                .ok_or_else(|| {
                    differ(format!(
                        "run {j}: {whole} {what} are not the common part's {part} plus {blocks} equal blocks"
                    ))
                })
        };
        let this = Counts {
            rows: block(c.rows, base.rows, "rows")?,
            inputs: block(c.inputs, base.inputs, "inputs")?,
            aux: block(c.aux, base.aux, "aux variables")?,
        };
        match per {
            None => per = Some(this),
            Some(p) if p == this => {}
            Some(p) => {
                return Err(differ(format!(
                    "run {j}'s blocks have {this:?} each, run 0's {p:?}"
                )))
            }
        }
        for (name, mine, theirs) in [
            ("A", &run.a, &common.a),
            ("B", &run.b, &common.b),
            ("C", &run.c, &common.c),
        ] {
            if !same_prefix(mine, theirs, base.rows) {
                return Err(differ(format!(
                    "run {j}'s first {} rows of {name} are not the common part's",
                    base.rows
                )));
            }
        }
    }
    // Room for everything at once: the joined matrices are the size of the whole circuit's.
    common.a.reserve_beyond(runs.iter().map(|(r, _)| &r.a));
    common.b.reserve_beyond(runs.iter().map(|(r, _)| &r.b));
    common.c.reserve_beyond(runs.iter().map(|(r, _)| &r.c));
    let mut inputs = base.inputs;
    let mut aux = base.aux;
    for (run, blocks) in runs {
        let p = per.expect("set by the first run");
        let map = |col: u32| -> u32 {
            if col & AUX_TAG != 0 {
                let a = col & !AUX_TAG;
                if (a as usize) < base.aux {
                    col
                } else {
                    AUX_TAG | (a - base.aux as u32 + aux as u32)
                }
            } else if (col as usize) < base.inputs {
                col
            } else {
                col - base.inputs as u32 + inputs as u32
            }
        };
        common.a.append_rows(&run.a, base.rows, map);
        common.b.append_rows(&run.b, base.rows, map);
        common.c.append_rows(&run.c, base.rows, map);
        inputs += blocks * p.inputs;
        aux += blocks * p.aux;
        // The run's memory goes as soon as it is joined.
        drop(run);
    }
    common.num_inputs = inputs;
    common.num_aux = aux;
    if inputs > AUX_TAG as usize || aux > AUX_TAG as usize {
        return Err(SynthError::TooLarge { inputs, aux });
    }
    Ok(common)
}

/// Whether `mine`'s first `rows` rows are `theirs`' (which has exactly that many): the same
/// columns with the same coefficient values, whatever the tables' orders.
fn same_prefix(mine: &Builder, theirs: &Builder, rows: usize) -> bool {
    if mine.row_ptr.len() <= rows || theirs.row_ptr.len() != rows + 1 {
        return false;
    }
    let end = mine.row_ptr[rows] as usize;
    mine.row_ptr[..=rows] == theirs.row_ptr[..]
        && mine.cols[..end] == theirs.cols[..]
        && mine.coeffs[..end]
            .iter()
            .zip(&theirs.coeffs)
            .all(|(&k, &t)| mine.table[k as usize] == theirs.table[t as usize])
}

#[cfg(test)]
mod tests {
    use crate::{Pce, SynthError};
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use cuzk_field::Scalar;

    /// A common part (an input and two aux, one constraint) and `blocks` blocks, each an
    /// input, two aux and three constraints over the common part and itself, with
    /// coefficients that differ per block (so a mixed-up join shows). `odd`: the block at that
    /// index has one constraint more.
    #[derive(Clone)]
    struct Blocks {
        first: usize,
        blocks: usize,
        odd: Option<usize>,
        common_extra: bool,
        /// The coefficient of x in the common constraint.
        common_coeff: u64,
    }

    impl Circuit<Scalar> for Blocks {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let one = Scalar::from(1);
            let x = cs.alloc_input(|| "x", || Ok(one))?;
            let y = cs.alloc(|| "y", || Ok(one))?;
            let z = cs.alloc(|| "z", || Ok(one))?;
            let c = Scalar::from(self.common_coeff);
            cs.enforce(|| "common", |lc| lc + (c, x), |lc| lc + y, |lc| lc + z);
            if self.common_extra {
                cs.enforce(|| "extra", |lc| lc + y, |lc| lc + y, |lc| lc + z);
            }
            for i in self.first..self.first + self.blocks {
                let k = Scalar::from(i as u64 + 2);
                let w = cs.alloc_input(|| "w", || Ok(one))?;
                let u = cs.alloc(|| "u", || Ok(one))?;
                let v = cs.alloc(|| "v", || Ok(one))?;
                cs.enforce(|| "b0", |lc| lc + (k, x) + u, |lc| lc + y, |lc| lc + v);
                cs.enforce(|| "b1", |lc| lc + w, |lc| lc + (k, z), |lc| lc + u + v);
                cs.enforce(|| "b2", |lc| lc + v, |lc| lc + CS::one(), |lc| lc + (k, w));
                if self.odd == Some(i) {
                    cs.enforce(|| "odd", |lc| lc + v, |lc| lc + v, |lc| lc + v);
                }
            }
            Ok(())
        }
    }

    fn blocks(first: usize, blocks: usize) -> Blocks {
        Blocks {
            first,
            blocks,
            odd: None,
            common_extra: false,
            common_coeff: 1,
        }
    }

    #[test]
    fn runs_join_into_the_whole_circuits_pce() {
        for (total, split) in [
            (1, vec![1]),
            (2, vec![1, 1]),
            (5, vec![2, 2, 1]),
            (7, vec![1, 3, 3]),
        ] {
            let whole = Pce::record(blocks(0, total)).unwrap();
            let mut first = 0;
            let runs = split
                .iter()
                .map(|&k| {
                    let run = (blocks(first, k), k);
                    first += k;
                    run
                })
                .collect();
            let joined = Pce::record_runs(blocks(0, 0), runs).unwrap();
            assert_eq!(joined, whole, "{total} blocks as {split:?}");
        }
    }

    #[test]
    fn runs_that_are_not_one_circuit_are_refused() {
        let differ = |r: Result<Pce, SynthError>| matches!(r, Err(SynthError::RunsDiffer { .. }));
        // A block of another shape.
        let odd = Blocks {
            odd: Some(3),
            ..blocks(2, 2)
        };
        assert!(differ(Pce::record_runs(
            blocks(0, 0),
            vec![(blocks(0, 2), 2), (odd, 2)]
        )));
        // A run whose common part is not the common circuit's.
        let other = Blocks {
            common_extra: true,
            ..blocks(0, 2)
        };
        assert!(differ(Pce::record_runs(blocks(0, 0), vec![(other, 2)])));
        // The same counts, one coefficient of the common part changed: only the prefix check
        // sees it.
        let changed = Blocks {
            common_coeff: 5,
            ..blocks(0, 2)
        };
        assert!(differ(Pce::record_runs(blocks(0, 0), vec![(changed, 2)])));
        // A count that does not match the run.
        assert!(differ(Pce::record_runs(
            blocks(0, 0),
            vec![(blocks(0, 3), 2)]
        )));
        assert!(differ(Pce::record_runs(
            blocks(0, 0),
            vec![(blocks(0, 0), 0)]
        )));
    }
}
