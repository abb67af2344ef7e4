//! The one error type of synthesis, evaluation and PCE files.

use std::path::PathBuf;

/// Why synthesis, evaluation or a PCE file failed.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The circuit itself returned an error while synthesizing.
    #[error("circuit synthesis failed: {0}")]
    Circuit(#[from] bellpepper_core::SynthesisError),

    /// The caller refused the circuit or its witness: building the circuit from the request
    /// failed, or the witness's public inputs are not the verifier's (`reason` says which).
    #[error("{reason}")]
    Rejected {
        /// What was refused and why.
        reason: String,
    },

    /// A constraint referred to a variable that had not been allocated yet.
    #[error("constraint {constraint} refers to {variable}, which is not allocated")]
    UnallocatedVariable {
        /// Index of the offending constraint.
        constraint: usize,
        /// The variable, e.g. `aux 17`.
        variable: String,
    },

    /// The circuit has more variables than 32-bit column indices can address.
    #[error("circuit has {inputs} inputs and {aux} aux variables; at most 2^32 variables and 2^31 of each kind are supported")]
    TooLarge {
        /// Number of inputs, ONE included.
        inputs: usize,
        /// Number of aux variables.
        aux: usize,
    },

    /// Reading or writing a PCE file failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Reading or writing a PCE stream (not a named file) failed.
    #[error("I/O error on PCE stream: {source}")]
    StreamIo {
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The data does not start with the PCE magic bytes: not a PCE file.
    #[error("not a PCE file: magic bytes are {found:02x?}")]
    BadMagic {
        /// The first eight bytes found.
        found: [u8; 8],
    },

    /// The file's format version is not one this build reads.
    #[error("PCE format version {found} is not supported (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this build reads and writes.
        supported: u32,
    },

    /// The data ended early.
    #[error("PCE data truncated while reading {section}")]
    Truncated {
        /// The part that was being read.
        section: &'static str,
    },

    /// A CRC32 does not match: the bytes were damaged.
    #[error("PCE {section} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// `header` or `file`.
        section: &'static str,
        /// The checksum stored in the data.
        stored: u32,
        /// The checksum of the bytes actually read.
        computed: u32,
    },

    /// The PCE was recorded for another circuit.
    #[error("PCE is for circuit {found:?}, expected {expected:?}")]
    CircuitMismatch {
        /// The key the caller asked for.
        expected: String,
        /// The key stored in the file.
        found: String,
    },

    /// Circuits recorded apart as runs of one circuit's repeated blocks
    /// ([`crate::Pce::record_runs`]) do not have the shape that joining them assumes.
    #[error("runs recorded apart do not join into one circuit: {reason}")]
    RunsDiffer {
        /// What differs, naming the run.
        reason: String,
    },

    /// A circuit key is too long to be stored.
    #[error("circuit key is {len} bytes long; at most {max} are allowed")]
    KeyTooLong {
        /// Length of the key in bytes.
        len: usize,
        /// The maximum.
        max: usize,
    },

    /// Checksums match but the content is inconsistent (a bug in the writer, or a forged file).
    #[error("PCE content is corrupt: {what}")]
    Corrupt {
        /// What is wrong, naming the offending value.
        what: String,
    },

    /// A witness does not have the number of inputs and aux variables the PCE expects.
    #[error("witness has {found_inputs} inputs and {found_aux} aux variables; the circuit has {expected_inputs} and {expected_aux}")]
    WitnessShape {
        /// Inputs the circuit has (ONE included).
        expected_inputs: usize,
        /// Aux variables the circuit has.
        expected_aux: usize,
        /// Inputs in the witness.
        found_inputs: usize,
        /// Aux variables in the witness.
        found_aux: usize,
    },

    /// Output buffers or evaluations do not have one entry per row.
    #[error(
        "evaluation buffers have lengths a={a}, b={b}, c={c}; the circuit has {expected} rows"
    )]
    EvaluationShape {
        /// Rows of the circuit (constraints plus inputs).
        expected: usize,
        /// Length of `a`.
        a: usize,
        /// Length of `b`.
        b: usize,
        /// Length of `c`.
        c: usize,
    },

    /// A constraint does not hold (`a·b ≠ c`).
    #[error("constraint {index} is not satisfied{}", name.as_ref().map(|n| format!(": {n}")).unwrap_or_default())]
    Unsatisfied {
        /// Row index of the first failing constraint.
        index: usize,
        /// Its full namespace path, where known.
        name: Option<String>,
    },
}
