//! The pre-compiled constraint evaluator: one circuit shape's A, B and C as CSR matrices,
//! recorded once and multiplied by each witness.

mod crc_io;
mod eval;
mod file;

pub use file::{MAX_KEY_LEN, PCE_FORMAT_VERSION, PCE_MAGIC};

use crate::record::RecordingCs;
use crate::{Bitmap, Density, SynthError, Witness, WitnessCs};
use bellpepper_core::Circuit;
use cuzk_field::Scalar;
use ff::Field;

/// One sparse matrix in compressed sparse row form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csr {
    /// `row_ptr[i]..row_ptr[i+1]` indexes row i's entries; length rows + 1.
    pub row_ptr: Vec<u64>,
    /// Column (variable) of each entry: inputs first, then aux.
    pub cols: Vec<u32>,
    /// Coefficient of each entry (never zero).
    pub vals: Vec<Scalar>,
}

impl Csr {
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
            vals: Vec::with_capacity(entries),
        }
    }

    /// Appends a row of (column, coefficient) entries.
    pub fn push_row(&mut self, entries: &[(u32, Scalar)]) {
        for &(col, val) in entries {
            self.cols.push(col);
            self.vals.push(val);
        }
        self.row_ptr.push(self.cols.len() as u64);
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
        if self.cols.len() != self.vals.len() {
            return corrupt(format!(
                "{} columns but {} values",
                self.cols.len(),
                self.vals.len()
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
        if let Some(k) = self.vals.iter().position(|v| *v == Scalar::ZERO) {
            return corrupt(format!("entry {k} has a zero coefficient"));
        }
        Ok(())
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

    /// Rows: constraints plus one per input.
    pub fn num_rows(&self) -> usize {
        self.num_constraints + self.num_inputs
    }

    /// Number of variables (columns): inputs plus aux.
    pub fn num_vars(&self) -> usize {
        self.num_inputs + self.num_aux
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
            let a = self.a.row_ptr[row] as usize..self.a.row_ptr[row + 1] as usize;
            let a_ok = self.a.cols[a.clone()] == [i as u32] && self.a.vals[a] == [Scalar::ONE];
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
        if w.inputs.len() == self.num_inputs && w.aux.len() == self.num_aux {
            return Ok(());
        }
        Err(SynthError::WitnessShape {
            expected_inputs: self.num_inputs,
            expected_aux: self.num_aux,
            found_inputs: w.inputs.len(),
            found_aux: w.aux.len(),
        })
    }
}
