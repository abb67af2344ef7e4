//! The pre-compiled constraint evaluator: one circuit shape's A, B and C as CSR matrices,
//! recorded once and multiplied by each witness.

mod crc_io;
mod eval;
mod file;

pub use file::{PceHeader, MAX_KEY_LEN, PCE_FORMAT_VERSION, PCE_MAGIC};

use crate::paired::PairedCs;
use crate::record::RecordingCs;
use crate::{Bitmap, Density, SynthError, Witness, WitnessCs};
use bellpepper_core::Circuit;
use cuzk_field::{FrRepr, Scalar};
use ff::Field;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// One sparse matrix in compressed sparse row form.
///
/// An entry is its column and a `u32` index into `table`, the matrix's distinct nonzero
/// coefficients: real circuits have few (mostly ±1, powers of two, some constants), so an
/// entry takes 8 bytes rather than 36 (28 less: at 2^27 rows of a few entries each,
/// gigabytes less to hold and to read per witness), and evaluation branches on an integer
/// instead of comparing 32-byte scalars. Index 0 is always ONE and index 1 always −ONE
/// ([`Csr::ONE_INDEX`], [`Csr::MINUS_ONE_INDEX`]), present even when unused, so that the
/// commonest coefficients are an addition or a subtraction without a table read.
///
/// The table may hold values no entry uses; two matrices are equal when they have the same
/// rows, columns and coefficient of each entry, however their tables order the values. A
/// default matrix is empty, without even its first row pointer: [`Csr::push_row`] adds
/// that and the table's ONE and −ONE.
#[derive(Clone, Default)]
pub struct Csr {
    /// `row_ptr[i]..row_ptr[i+1]` indexes row i's entries; length rows + 1.
    pub row_ptr: Vec<u64>,
    /// Column (variable) of each entry: inputs first, then aux.
    pub cols: Vec<u32>,
    /// Coefficient of each entry, as an index into `table`.
    pub coeffs: Vec<u32>,
    /// The distinct coefficients: ONE, −ONE, then the others (never zero).
    pub table: Vec<Scalar>,
    /// Where each value sits in `table`, for [`Csr::push_row`].
    interner: Interner,
}

impl Csr {
    /// Table index of ONE.
    pub const ONE_INDEX: u32 = 0;
    /// Table index of −ONE.
    pub const MINUS_ONE_INDEX: u32 = 1;

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// An empty matrix with room for `rows` rows and `entries` entries.
    pub fn with_capacity(rows: usize, entries: usize) -> Csr {
        let mut row_ptr = Vec::with_capacity(rows + 1);
        row_ptr.push(0);
        Csr {
            row_ptr,
            cols: Vec::with_capacity(entries),
            coeffs: Vec::with_capacity(entries),
            table: vec![Scalar::ONE, -Scalar::ONE],
            interner: Interner::default(),
        }
    }

    /// A matrix of these parts, unchecked ([`Pce::validate`] checks them).
    pub fn from_parts(
        row_ptr: Vec<u64>,
        cols: Vec<u32>,
        coeffs: Vec<u32>,
        table: Vec<Scalar>,
    ) -> Csr {
        Csr {
            row_ptr,
            cols,
            coeffs,
            table,
            interner: Interner::default(),
        }
    }

    /// Appends a row of (column, coefficient) entries, adding new coefficients to the table.
    pub fn push_row(&mut self, entries: &[(u32, Scalar)]) {
        if self.row_ptr.is_empty() {
            self.row_ptr.push(0);
        }
        if self.table.len() < 2 {
            // ONE and −ONE head every table, even one whose rows are all empty (interning
            // ONE puts them there).
            self.interner.intern(&mut self.table, &Scalar::ONE);
        }
        for (col, val) in entries {
            self.cols.push(*col);
            let k = self.interner.intern(&mut self.table, val);
            self.coeffs.push(k);
        }
        self.row_ptr.push(self.cols.len() as u64);
    }

    /// The coefficient of entry `k`.
    #[inline]
    pub fn coeff(&self, k: usize) -> &Scalar {
        &self.table[self.coeffs[k] as usize]
    }

    /// Row `r`'s entries as (column, coefficient).
    pub fn row(&self, r: usize) -> impl ExactSizeIterator<Item = (u32, &Scalar)> + '_ {
        let entries = self.row_ptr[r] as usize..self.row_ptr[r + 1] as usize;
        self.cols[entries.clone()]
            .iter()
            .zip(&self.coeffs[entries])
            .map(|(&col, &k)| (col, &self.table[k as usize]))
    }

    /// The table without values no entry uses, and each old index's new one (ONE and −ONE
    /// keep theirs; an index out of the table maps to `u32::MAX`). `None` when every value
    /// is used.
    pub(crate) fn compacted_table(&self) -> Option<(Vec<u32>, Vec<Scalar>)> {
        let mut used = vec![false; self.table.len()];
        used.iter_mut().take(2).for_each(|u| *u = true);
        for &k in &self.coeffs {
            if let Some(u) = used.get_mut(k as usize) {
                *u = true;
            }
        }
        if used.iter().all(|&u| u) {
            return None;
        }
        let mut remap = vec![u32::MAX; self.table.len()];
        let mut table = Vec::new();
        for (k, v) in self.table.iter().enumerate() {
            if used[k] {
                remap[k] = table.len() as u32;
                table.push(*v);
            }
        }
        Some((remap, table))
    }

    /// Checks the CSR invariants for `rows` rows over `vars` variables; `name` is the
    /// matrix's name in the error.
    fn validate(&self, name: &str, rows: usize, vars: usize) -> Result<(), SynthError> {
        let corrupt = |what: String| {
            Err(SynthError::Corrupt {
                what: format!("matrix {name}: {what}"),
            })
        };
        if self.row_ptr.len() != rows + 1 {
            return corrupt(format!(
                "{} row pointers for {rows} rows",
                self.row_ptr.len()
            ));
        }
        if self.cols.len() != self.coeffs.len() {
            return corrupt(format!(
                "{} columns but {} coefficient indices",
                self.cols.len(),
                self.coeffs.len()
            ));
        }
        if self.row_ptr[0] != 0 {
            return corrupt(format!("row_ptr[0] is {}, not 0", self.row_ptr[0]));
        }
        if let Some(i) = self.row_ptr.windows(2).position(|w| w[0] > w[1]) {
            return corrupt(format!(
                "row_ptr not monotone at row {i}: {} > {}",
                self.row_ptr[i],
                self.row_ptr[i + 1]
            ));
        }
        if self.row_ptr[rows] != self.cols.len() as u64 {
            return corrupt(format!(
                "row_ptr ends at {} but there are {} entries",
                self.row_ptr[rows],
                self.cols.len()
            ));
        }
        if let Some(k) = self.cols.iter().position(|&c| c as usize >= vars) {
            return corrupt(format!(
                "entry {k} has column {} but there are {vars} variables",
                self.cols[k]
            ));
        }
        if self.table.len() < 2 {
            return corrupt(format!(
                "coefficient table has {} values; it must start with ONE and -ONE",
                self.table.len()
            ));
        }
        if self.table[Csr::ONE_INDEX as usize] != Scalar::ONE {
            return corrupt(format!(
                "coefficient table entry {} is not ONE",
                Csr::ONE_INDEX
            ));
        }
        if self.table[Csr::MINUS_ONE_INDEX as usize] != -Scalar::ONE {
            return corrupt(format!(
                "coefficient table entry {} is not -ONE",
                Csr::MINUS_ONE_INDEX
            ));
        }
        if let Some(k) = self.table.iter().position(|v| *v == Scalar::ZERO) {
            return corrupt(format!("coefficient table entry {k} is zero"));
        }
        if let Some(k) = self
            .coeffs
            .iter()
            .position(|&i| i as usize >= self.table.len())
        {
            return corrupt(format!(
                "entry {k} has coefficient index {} but the table has {} values",
                self.coeffs[k],
                self.table.len()
            ));
        }
        Ok(())
    }
}

impl PartialEq for Csr {
    fn eq(&self, other: &Csr) -> bool {
        let same_coeffs = || {
            (self.table == other.table && self.coeffs == other.coeffs)
                || self.coeffs.iter().zip(&other.coeffs).all(|(&i, &j)| {
                    match (self.table.get(i as usize), other.table.get(j as usize)) {
                        (Some(a), Some(b)) => a == b,
                        // An index past its table (an invalid matrix) equals nothing.
                        _ => false,
                    }
                })
        };
        self.row_ptr == other.row_ptr
            && self.cols == other.cols
            && self.coeffs.len() == other.coeffs.len()
            && same_coeffs()
    }
}

impl Eq for Csr {}

impl std::fmt::Debug for Csr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Csr")
            .field("row_ptr", &self.row_ptr)
            .field("cols", &self.cols)
            .field("coeffs", &self.coeffs)
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// The index of each value of a coefficient table past ONE and −ONE, by Montgomery limbs.
///
/// It follows the table as far as the table has been built through it: values added by
/// other means (a loaded or hand-built matrix) are indexed on the next look-up, and a hit
/// is compared with the table's value, so a stale index never gives a wrong coefficient.
#[derive(Clone, Default)]
pub(crate) struct Interner {
    index: HashMap<Limbs, u32, BuildHasherDefault<LimbHasher>>,
    /// Length of the table that `index` describes.
    indexed: usize,
}

impl std::fmt::Debug for Interner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interner")
            .field("values", &self.index.len())
            .finish()
    }
}

impl Interner {
    /// The index of `v` in `table`, appending it if it is not there; a table shorter than
    /// two values first gets ONE and −ONE.
    #[inline]
    pub(crate) fn intern(&mut self, table: &mut Vec<Scalar>, v: &Scalar) -> u32 {
        if table.is_empty() {
            table.push(Scalar::ONE);
        }
        if table.len() == 1 {
            table.push(-Scalar::ONE);
        }
        if *v == table[Csr::ONE_INDEX as usize] {
            return Csr::ONE_INDEX;
        }
        if *v == table[Csr::MINUS_ONE_INDEX as usize] {
            return Csr::MINUS_ONE_INDEX;
        }
        if self.indexed != table.len() {
            self.reindex(table);
        }
        let key = Limbs(FrRepr::from(*v).limbs);
        if let Some(&k) = self.index.get(&key) {
            if table.get(k as usize) == Some(v) {
                return k;
            }
        }
        let k = u32::try_from(table.len()).expect("at most 2^32 distinct coefficients");
        table.push(*v);
        self.index.insert(key, k);
        self.indexed = table.len();
        k
    }

    fn reindex(&mut self, table: &[Scalar]) {
        self.index.clear();
        for (k, v) in table.iter().enumerate().skip(2) {
            self.index
                .entry(Limbs(FrRepr::from(*v).limbs))
                .or_insert(k as u32);
        }
        self.indexed = table.len();
    }
}

/// A scalar's Montgomery limbs as a hash key, hashed as one word.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Limbs([u64; 4]);

impl Hash for Limbs {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let [a, b, c, d] = self.0;
        state.write_u64(a ^ b.rotate_left(16) ^ c.rotate_left(32) ^ d.rotate_left(48));
    }
}

/// A hasher for [`Limbs`]: one multiply-fold of the word it is given (Montgomery limbs are
/// already well spread, and the keys are the circuit's own, not an adversary's).
#[derive(Default)]
struct LimbHasher(u64);

impl Hasher for LimbHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let m = u128::from(self.0 ^ x) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A pre-compiled constraint evaluator: one circuit shape's A, B and C.
///
/// Rows are the circuit's constraints in order, then one input-consistency row per input
/// (A holds that input with coefficient one; B and C are empty). Columns are the inputs
/// (ONE first), then the aux variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pce {
    /// Number of public inputs, ONE included.
    pub num_inputs: usize,
    /// Number of aux variables.
    pub num_aux: usize,
    /// Number of the circuit's own constraints (input rows not counted).
    pub num_constraints: usize,
    /// A.
    pub a: Csr,
    /// B.
    pub b: Csr,
    /// C.
    pub c: Csr,
}

impl Pce {
    /// Records the circuit's A/B/C (values of the assignment are not evaluated).
    pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<Pce, SynthError> {
        let mut cs = RecordingCs::with_one();
        circuit.synthesize(&mut cs)?;
        let pce = cs.finish()?;
        tracing::debug!(
            constraints = pce.num_constraints,
            inputs = pce.num_inputs,
            aux = pce.num_aux,
            nnz_a = pce.a.nnz(),
            nnz_b = pce.b.nnz(),
            nnz_c = pce.c.nnz(),
            "recorded PCE"
        );
        Ok(pce)
    }

    /// [`Pce::record`] of a circuit made of a common part and repeated blocks (PoRep's
    /// challenges), recorded in parallel runs and joined: `common` is the circuit without
    /// blocks, `runs` the circuit with each run's blocks, the circuit's blocks in order, each
    /// beside its count. For a circuit that allocates and constrains its common part first,
    /// then each block referring only to the common part and itself, this is the PCE
    /// recording the whole circuit gives (the runs' common parts and block shapes are
    /// checked: [`SynthError::RunsDiffer`] otherwise, when the whole circuit should be
    /// recorded instead). Runs of one block each leave the block shape unchecked against a
    /// second block: a circuit that adds rows to its common part only when it has blocks would
    /// join wrongly then, and only a proof's verification would show it.
    pub fn record_runs<C: Circuit<Scalar> + Send>(
        common: C,
        runs: Vec<(C, usize)>,
    ) -> Result<Pce, SynthError> {
        let pce = crate::record::record_runs(common, runs)?;
        tracing::debug!(
            constraints = pce.num_constraints,
            inputs = pce.num_inputs,
            aux = pce.num_aux,
            "recorded PCE in runs"
        );
        Ok(pce)
    }

    /// Rows: constraints plus one per input.
    pub fn num_rows(&self) -> usize {
        self.num_constraints + self.num_inputs
    }

    /// Number of variables (columns): inputs plus aux.
    pub fn num_vars(&self) -> usize {
        self.num_inputs + self.num_aux
    }

    /// Host bytes the three matrices hold (their vectors' lengths: a recorded or loaded PCE
    /// has no spare capacity to speak of).
    pub fn heap_bytes(&self) -> u64 {
        [&self.a, &self.b, &self.c]
            .iter()
            .map(|m| {
                std::mem::size_of_val(&m.row_ptr[..])
                    + std::mem::size_of_val(&m.cols[..])
                    + std::mem::size_of_val(&m.coeffs[..])
                    + std::mem::size_of_val(&m.table[..])
            })
            .sum::<usize>() as u64
    }

    /// Records the circuit and synthesizes its witness in one run, for a circuit seen for
    /// the first time: the same PCE as [`Pce::record`] and the same witness as
    /// [`crate::synthesize_witness`], every value computed once.
    pub fn record_with_witness<C: Circuit<Scalar>>(
        circuit: C,
    ) -> Result<(Pce, Witness), SynthError> {
        let mut cs = PairedCs::with_one();
        circuit.synthesize(&mut cs)?;
        let pce = cs.record.finish()?;
        let witness = cs.witness.into_witness();
        pce.check_witness_shape(&witness)?;
        Ok((pce, witness))
    }

    /// Runs the circuit on a witness-only constraint system sized for this shape (so it
    /// never reallocates) and checks that the witness has this shape.
    pub fn synthesize_witness<C: Circuit<Scalar>>(
        &self,
        circuit: C,
    ) -> Result<Witness, SynthError> {
        let mut cs = WitnessCs::with_capacity(self.num_inputs, self.num_aux);
        circuit.synthesize(&mut cs)?;
        let w = cs.into_witness();
        self.check_witness_shape(&w)?;
        Ok(w)
    }

    /// [`Pce::synthesize_witness`] in the memory of `spare`, a witness no longer needed (see
    /// [`WitnessCs::reusing`]); the result is the same.
    pub fn synthesize_witness_reusing<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        spare: Witness,
    ) -> Result<Witness, SynthError> {
        let mut cs = WitnessCs::reusing(spare, self.num_inputs, self.num_aux);
        circuit.synthesize(&mut cs)?;
        let w = cs.into_witness();
        self.check_witness_shape(&w)?;
        Ok(w)
    }

    /// Checks that the matrices are well formed for the stated shape (row pointers,
    /// columns in range, no zero coefficient, input rows as Groth16 appends them).
    /// Evaluation trusts these invariants; a PCE from [`Pce::record`] or [`Pce::load`]
    /// always has them.
    pub fn validate(&self) -> Result<(), SynthError> {
        let (rows, vars) = (self.num_rows(), self.num_vars());
        if self.num_inputs == 0 {
            return Err(SynthError::Corrupt {
                what: "no inputs (ONE is always input 0)".into(),
            });
        }
        if vars > 1 << 32 {
            return Err(SynthError::TooLarge {
                inputs: self.num_inputs,
                aux: self.num_aux,
            });
        }
        self.a.validate("A", rows, vars)?;
        self.b.validate("B", rows, vars)?;
        self.c.validate("C", rows, vars)?;
        for i in 0..self.num_inputs {
            let row = self.num_constraints + i;
            let mut a = self.a.row(row);
            let a_ok = a.len() == 1 && a.next() == Some((i as u32, &Scalar::ONE));
            let bc_empty = self.b.row_ptr[row] == self.b.row_ptr[row + 1]
                && self.c.row_ptr[row] == self.c.row_ptr[row + 1];
            if !(a_ok && bc_empty) {
                return Err(SynthError::Corrupt {
                    what: format!("row {row} is not the input-consistency row of input {i}"),
                });
            }
        }
        Ok(())
    }

    /// The density bitmaps of this circuit: which variables have a (nonzero) entry in A
    /// and B.
    pub fn density(&self) -> Density {
        let ni = self.num_inputs;
        let mut d = Density {
            a_aux: Bitmap::new(self.num_aux),
            b_input: Bitmap::new(ni),
            b_aux: Bitmap::new(self.num_aux),
        };
        for &col in &self.a.cols {
            if let Some(j) = (col as usize).checked_sub(ni) {
                d.a_aux.set(j);
            }
        }
        for &col in &self.b.cols {
            match (col as usize).checked_sub(ni) {
                Some(j) => d.b_aux.set(j),
                None => d.b_input.set(col as usize),
            }
        }
        d
    }

    /// Errors unless `w` has exactly this circuit's inputs and aux counts.
    pub fn check_witness_shape(&self, w: &Witness) -> Result<(), SynthError> {
        if w.inputs.len() == self.num_inputs && w.aux_len() == self.num_aux {
            return Ok(());
        }
        Err(SynthError::WitnessShape {
            expected_inputs: self.num_inputs,
            expected_aux: self.num_aux,
            found_inputs: w.inputs.len(),
            found_aux: w.aux_len(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Csr;
    use cuzk_field::Scalar;
    use ff::Field;

    #[test]
    fn a_default_matrix_of_empty_rows_has_the_table_head() {
        let mut m = Csr::default();
        m.push_row(&[]);
        m.push_row(&[]);
        assert_eq!(m.table, vec![Scalar::ONE, -Scalar::ONE]);
        assert_eq!(m.num_rows(), 2);
        assert!(m.validate("A", 2, 1).is_ok());
    }

    #[test]
    fn rows_intern_their_coefficients() {
        let (one, two, three) = (Scalar::ONE, Scalar::from(2), Scalar::from(3));
        let mut m = Csr::with_capacity(2, 5);
        m.push_row(&[(0, one), (1, -one), (2, two)]);
        m.push_row(&[(1, two), (3, three)]);
        assert_eq!(m.table, [one, -one, two, three]);
        assert_eq!(m.coeffs, [0, 1, 2, 2, 3]);
        assert_eq!(*m.coeff(4), three);
        assert_eq!(m.row(1).collect::<Vec<_>>(), [(1, &two), (3, &three)]);

        // A default matrix gets its first row pointer and ONE and -ONE on the first row.
        let mut d = Csr::default();
        d.push_row(&[(0, one), (1, -one), (2, two)]);
        d.push_row(&[(1, two), (3, three)]);
        assert_eq!(d, m);
    }

    #[test]
    fn equality_is_of_coefficients_not_table_order() {
        let (one, two, three) = (Scalar::ONE, Scalar::from(2), Scalar::from(3));
        let mut m = Csr::with_capacity(1, 3);
        m.push_row(&[(0, two), (1, three), (2, one)]);
        let table = vec![one, -one, three, two, Scalar::from(7)];
        let mut n = Csr::from_parts(vec![0, 3], vec![0, 1, 2], vec![3, 2, 0], table);
        assert_eq!(m, n);
        n.coeffs[2] = 1;
        assert_ne!(m, n);
        n.coeffs[2] = 0;

        // Appending to a matrix built from parts reuses its table's indices.
        n.push_row(&[(0, three), (1, Scalar::from(7)), (2, Scalar::from(9))]);
        assert_eq!(n.coeffs[3..], [2, 4, 5]);
        assert_eq!(n.table.len(), 6);
    }
}
