//! The recording constraint system: builds the CSR matrices of a PCE without evaluating
//! any assignment.

use crate::pce::Interner;
use crate::{Csr, Pce, SynthError};
use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use cuzk_field::Scalar;
use ff::Field;
use rayon::prelude::*;

mod join;

/// While recording, the number of inputs is not known yet (a circuit may allocate inputs
/// after aux variables), so aux columns are tagged and renumbered once synthesis is done.
const AUX_TAG: u32 = 1 << 31;

/// One matrix under construction, as a [`Csr`]: coefficients are indices into `table`;
/// columns are tagged (see [`AUX_TAG`]).
#[derive(Clone, Debug)]
struct Builder {
    row_ptr: Vec<u64>,
    cols: Vec<u32>,
    coeffs: Vec<u32>,
    table: Vec<Scalar>,
    interner: Interner,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            row_ptr: vec![0],
            cols: Vec::new(),
            coeffs: Vec::new(),
            table: vec![Scalar::ONE, -Scalar::ONE],
            interner: Interner::default(),
        }
    }

    /// Appends one entry.
    #[inline]
    fn push(&mut self, col: u32, coeff: &Scalar) {
        self.cols.push(col);
        let k = self.interner.intern(&mut self.table, coeff);
        self.coeffs.push(k);
    }

    /// Appends `lc` as one row, dropping zero coefficients. Errors with the first
    /// variable that is not allocated yet (the row is then recorded without it).
    fn push_row(
        &mut self,
        lc: &LinearCombination<Scalar>,
        num_inputs: usize,
        num_aux: usize,
    ) -> Result<(), String> {
        let start = self.cols.len();
        let mut missing = None;
        for (&i, coeff) in lc.iter_inputs() {
            if *coeff == Scalar::ZERO {
                continue;
            }
            if i >= num_inputs {
                missing.get_or_insert_with(|| format!("input {i}"));
                continue;
            }
            self.push(i as u32, coeff);
        }
        for (&j, coeff) in lc.iter_aux() {
            if *coeff == Scalar::ZERO {
                continue;
            }
            if j >= num_aux {
                missing.get_or_insert_with(|| format!("aux {j}"));
                continue;
            }
            self.push(AUX_TAG | j as u32, coeff);
        }
        // bellpepper's indexer keeps terms sorted and merged; if a linear combination ever
        // arrives otherwise, merge it here so that each column appears once per row.
        if !self.cols[start..].windows(2).all(|w| w[0] < w[1]) {
            self.merge_row(start);
        }
        self.row_ptr.push(self.cols.len() as u64);
        missing.map_or(Ok(()), Err)
    }

    /// Sorts the entries `start..` by column, sums duplicates and drops the zero sums.
    fn merge_row(&mut self, start: usize) {
        let table = &self.table;
        let mut row: Vec<(u32, Scalar)> = self
            .cols
            .drain(start..)
            .zip(self.coeffs.drain(start..))
            .map(|(col, k)| (col, table[k as usize]))
            .collect();
        row.sort_by_key(|&(col, _)| col);
        let mut merged: Vec<(u32, Scalar)> = Vec::with_capacity(row.len());
        for (col, val) in row {
            match merged.last_mut() {
                Some((last, sum)) if *last == col => *sum += val,
                _ => merged.push((col, val)),
            }
        }
        for (col, sum) in merged {
            if sum != Scalar::ZERO {
                self.push(col, &sum);
            }
        }
    }

    /// Appends `other`'s rows, renumbering its variables to follow ours.
    fn append(&mut self, other: &Builder, input_base: u32, aux_base: u32) {
        self.append_rows(other, 0, |col| match col {
            0 => 0,
            c if c & AUX_TAG != 0 => AUX_TAG | aux_base.wrapping_add(c & !AUX_TAG),
            c => input_base.wrapping_add(c - 1),
        });
    }

    /// Appends `other`'s rows from `from` on, their columns mapped by `map` and their
    /// coefficients interned into this table.
    fn append_rows(&mut self, other: &Builder, from: usize, map: impl Fn(u32) -> u32) {
        let start = other.row_ptr[from] as usize;
        let offset = self.cols.len() as u64;
        self.row_ptr.extend(
            other.row_ptr[from + 1..]
                .iter()
                .map(|p| p - start as u64 + offset),
        );
        self.cols
            .extend(other.cols[start..].iter().map(|&c| map(c)));
        let remap: Vec<u32> = other
            .table
            .iter()
            .map(|v| self.interner.intern(&mut self.table, v))
            .collect();
        self.coeffs
            .extend(other.coeffs[start..].iter().map(|&k| remap[k as usize]));
    }

    /// Makes room for the rows and entries `others` hold beyond this matrix's own (the runs
    /// a join appends after their common part, which is this matrix).
    fn reserve_beyond<'a>(&mut self, others: impl Iterator<Item = &'a Builder>) {
        let (rows, entries) = (self.row_ptr.len(), self.cols.len());
        let (more_rows, more_entries) = others.fold((0, 0), |(r, e), o| {
            (r + o.row_ptr.len() - rows, e + o.cols.len() - entries)
        });
        self.row_ptr.reserve_exact(more_rows);
        self.cols.reserve_exact(more_entries);
        self.coeffs.reserve_exact(more_entries);
    }

    /// Untags the columns: inputs keep their index, aux `j` becomes `num_inputs + j`.
    fn into_csr(mut self, num_inputs: u32) -> Csr {
        self.cols.par_iter_mut().for_each(|col| {
            if *col & AUX_TAG != 0 {
                *col = num_inputs + (*col & !AUX_TAG);
            }
        });
        Csr::from_parts(self.row_ptr, self.cols, self.coeffs, self.table)
    }
}

/// Constraint system that records A, B and C; value closures are never called.
///
/// Extensible with bellperson's contract, like [`crate::FullCs`]: [`ConstraintSystem::new`]
/// is empty, a sub-circuit's first input is its temp ONE, and `extend` maps that column to
/// our ONE and drops the input. [`RecordingCs::with_one`] starts a whole circuit.
#[derive(Clone, Debug)]
pub(crate) struct RecordingCs {
    num_inputs: usize,
    num_aux: usize,
    a: Builder,
    b: Builder,
    c: Builder,
    /// First constraint that referred to an unallocated variable: (constraint, variable).
    unallocated: Option<(usize, String)>,
}

/// Records `common` (the circuit without its repeated blocks) and `runs` (the circuit with
/// each run's blocks, in order) in parallel and joins them ([`join::join`]).
pub(crate) fn record_runs<C: Circuit<Scalar> + Send>(
    common: C,
    runs: Vec<(C, usize)>,
) -> Result<Pce, SynthError> {
    let record = |c: C| -> Result<RecordingCs, SynthError> {
        let mut cs = RecordingCs::with_one();
        c.synthesize(&mut cs)?;
        Ok(cs)
    };
    let (common, runs) = rayon::join(
        || record(common),
        || {
            runs.into_par_iter()
                .map(|(c, blocks)| record(c).map(|cs| (cs, blocks)))
                .collect::<Result<Vec<_>, _>>()
        },
    );
    join::join(common?, runs?)?.finish()
}

impl RecordingCs {
    /// A system for a whole circuit: input 0 is the constant ONE.
    pub(crate) fn with_one() -> RecordingCs {
        RecordingCs {
            num_inputs: 1,
            ..RecordingCs::new()
        }
    }

    fn num_constraints(&self) -> usize {
        self.a.row_ptr.len() - 1
    }

    /// Appends the input-consistency rows and renumbers the columns.
    pub(crate) fn finish(mut self) -> Result<Pce, SynthError> {
        if let Some((constraint, variable)) = self.unallocated {
            return Err(SynthError::UnallocatedVariable {
                constraint,
                variable,
            });
        }
        let (num_inputs, num_aux) = (self.num_inputs, self.num_aux);
        let tag = AUX_TAG as usize;
        if num_inputs > tag || num_aux > tag || num_inputs + num_aux > 2 * tag {
            return Err(SynthError::TooLarge {
                inputs: num_inputs,
                aux: num_aux,
            });
        }
        let num_constraints = self.num_constraints();
        for i in 0..num_inputs {
            self.a.cols.push(i as u32);
            self.a.coeffs.push(Csr::ONE_INDEX);
            self.a.row_ptr.push(self.a.cols.len() as u64);
            self.b.row_ptr.push(self.b.cols.len() as u64);
            self.c.row_ptr.push(self.c.cols.len() as u64);
        }
        // Rows are at most 2^32, so the cast is lossless whenever the check above passed.
        let ni = num_inputs as u32;
        Ok(Pce {
            num_inputs,
            num_aux,
            num_constraints,
            a: self.a.into_csr(ni),
            b: self.b.into_csr(ni),
            c: self.c.into_csr(ni),
        })
    }
}

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    /// An empty system (no ONE), as bellperson's: see [`RecordingCs`].
    fn new() -> Self {
        RecordingCs {
            num_inputs: 0,
            num_aux: 0,
            a: Builder::new(),
            b: Builder::new(),
            c: Builder::new(),
            unallocated: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let row = self.num_constraints();
        let (ni, na) = (self.num_inputs, self.num_aux);
        let results = [
            self.a.push_row(&a(LinearCombination::zero()), ni, na),
            self.b.push_row(&b(LinearCombination::zero()), ni, na),
            self.c.push_row(&c(LinearCombination::zero()), ni, na),
        ];
        if self.unallocated.is_none() {
            if let Some(Err(variable)) = results.into_iter().find(Result::is_err) {
                self.unallocated = Some((row, variable));
            }
        }
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
        if self.unallocated.is_none() {
            if let Some((row, variable)) = &other.unallocated {
                self.unallocated = Some((self.num_constraints() + row, variable.clone()));
            }
        }
        // Bases wrap only for circuits `finish` rejects as too large anyway.
        let input_base = self.num_inputs as u32;
        let aux_base = self.num_aux as u32;
        self.a.append(&other.a, input_base, aux_base);
        self.b.append(&other.b, input_base, aux_base);
        self.c.append(&other.c, input_base, aux_base);
        // `other`'s input 0 (its temp ONE, column 0 above) is our ONE.
        self.num_inputs += other.num_inputs.saturating_sub(1);
        self.num_aux += other.num_aux;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_row_sums_duplicates_and_drops_zeros() {
        let mut m = Builder::new();
        let two = Scalar::from(2);
        let one = Scalar::ONE;
        for (col, val) in [(5, one), (3, two), (5, -one), (3, one), (7, two)] {
            m.push(col, &val);
        }
        m.merge_row(0);
        assert_eq!(m.cols, vec![3, 7]);
        let vals: Vec<Scalar> = m.coeffs.iter().map(|&k| m.table[k as usize]).collect();
        assert_eq!(vals, vec![Scalar::from(3), two]);
    }
}
