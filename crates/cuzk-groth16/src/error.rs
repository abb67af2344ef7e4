//! The typed errors of parameter I/O, generation, proving and verification.

use std::fmt;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A named part of a parameter file, verifying key or proof, used to say where a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Section {
    /// `alpha_g1` of the verifying key.
    AlphaG1,
    /// `beta_g1` of the verifying key.
    BetaG1,
    /// `beta_g2` of the verifying key.
    BetaG2,
    /// `gamma_g2` of the verifying key.
    GammaG2,
    /// `delta_g1` of the verifying key.
    DeltaG1,
    /// `delta_g2` of the verifying key.
    DeltaG2,
    /// The input-commitment query `ic` of the verifying key (one point per public input, ONE included).
    Ic,
    /// The H query (powers of tau times Z(tau) over delta).
    H,
    /// The L query (one point per aux variable).
    L,
    /// The A query (G1).
    A,
    /// The B query in G1.
    BG1,
    /// The B query in G2.
    BG2,
    /// The A element of a proof.
    ProofA,
    /// The B element of a proof.
    ProofB,
    /// The C element of a proof.
    ProofC,
}

impl Section {
    /// The name used in messages, matching the field names of the parameter types.
    pub fn name(self) -> &'static str {
        match self {
            Section::AlphaG1 => "vk.alpha_g1",
            Section::BetaG1 => "vk.beta_g1",
            Section::BetaG2 => "vk.beta_g2",
            Section::GammaG2 => "vk.gamma_g2",
            Section::DeltaG1 => "vk.delta_g1",
            Section::DeltaG2 => "vk.delta_g2",
            Section::Ic => "vk.ic",
            Section::H => "h",
            Section::L => "l",
            Section::A => "a",
            Section::BG1 => "b_g1",
            Section::BG2 => "b_g2",
            Section::ProofA => "proof.a",
            Section::ProofB => "proof.b",
            Section::ProofC => "proof.c",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why an encoded curve point was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointError {
    /// The bytes are not a valid encoding of a point on the curve (bad flags, a coordinate
    /// not below the field modulus, or coordinates off the curve).
    NotOnCurve,
    /// The point is on the curve but not in the prime-order subgroup.
    NotInSubgroup,
    /// The point is the identity, which this position never holds in honest parameters or proofs.
    Identity,
}

impl fmt::Display for PointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PointError::NotOnCurve => "not a valid point on the curve",
            PointError::NotInSubgroup => "not in the prime-order subgroup",
            PointError::Identity => "the point at infinity",
        })
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing failed for a reason other than the data ending early.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),

    /// The data ended inside a section: it announced (or, for a single-point section,
    /// needs) `expected` points but only `found` complete ones were present.
    #[error("truncated data in section {section}: expected {expected} point(s), found {found}")]
    Truncated {
        /// The section being read.
        section: Section,
        /// Points the section should hold.
        expected: usize,
        /// Complete points actually present.
        found: usize,
    },

    /// The data ended where the 4-byte big-endian length of a section should be.
    #[error("truncated data: the length of section {section} is missing")]
    MissingLength {
        /// The section whose length is missing.
        section: Section,
    },

    /// A point failed validation.
    #[error("invalid point in section {section} at index {index}: {reason}")]
    InvalidPoint {
        /// The section holding the point.
        section: Section,
        /// Index of the point within its section (0 for single-point sections).
        index: usize,
        /// What is wrong with it.
        reason: PointError,
    },

    /// A proof's byte string does not have the 192-byte length of a compressed proof.
    #[error("a proof is {expected} bytes, got {found}")]
    ProofLength {
        /// The required length.
        expected: usize,
        /// The length given.
        found: usize,
    },

    /// The number of public inputs (the constant ONE not counted) does not match the
    /// verifying key or parameters.
    #[error(
        "wrong number of public inputs: the key expects {expected}, got {found} (ONE not counted)"
    )]
    WrongInputCount {
        /// Public inputs the key was made for.
        expected: usize,
        /// Public inputs supplied.
        found: usize,
    },

    /// The first input of a witness, the constant ONE of every circuit, is not one.
    #[error("witness input 0 must be the constant ONE")]
    ConstantNotOne,

    /// A witness, PCE, synthesis result or batch does not have the shape the parameters
    /// (or the other arguments) require.
    #[error("shape mismatch: {what} is {found}, expected {expected}")]
    ShapeMismatch {
        /// Which quantity disagrees.
        what: &'static str,
        /// The value the parameters (or other arguments) require.
        expected: usize,
        /// The value found.
        found: usize,
    },

    /// The witness does not satisfy the constraint in this row (`a·b ≠ c`): rows are the
    /// circuit's constraints in order, then one row per public input.
    #[error("the witness does not satisfy constraint row {row}")]
    Unsatisfied {
        /// Index of the first unsatisfied row.
        row: usize,
    },

    /// The circuit has more rows than the largest radix-2 domain of Fr supports.
    #[error(
        "{rows} constraint rows need a domain of 2^{log_size}, above the supported 2^{max_log}"
    )]
    DomainTooLarge {
        /// Rows (constraints plus input rows) to cover.
        rows: usize,
        /// log2 of the domain they would need.
        log_size: u32,
        /// log2 of the largest supported domain.
        max_log: u32,
    },

    /// An aux variable appears in no constraint, so its L query point would be the identity;
    /// a Groth16 key cannot be made for such a circuit.
    #[error("aux variable {index} is unconstrained")]
    UnconstrainedVariable {
        /// Index of the aux variable.
        index: usize,
    },

    /// The toxic waste is degenerate: tau is a root of the domain's vanishing polynomial,
    /// gamma or delta is zero, or a query that must be non-zero evaluated to zero at tau.
    #[error("degenerate toxic waste: {0}")]
    DegenerateToxicWaste(&'static str),

    /// Proving witness `index` of a batch failed.
    #[error("witness {index} of the batch: {source}")]
    InBatch {
        /// Position of the failing witness in the batch.
        index: usize,
        /// Why it failed.
        source: Box<Error>,
    },

    /// A CPU transform refused its input (a vector not of the domain's size). Boxed: the
    /// transform's error is larger than this crate's others.
    #[error(transparent)]
    Ntt(Box<cuzk_ntt::NttError>),

    /// Synthesizing the circuit or evaluating its PCE failed.
    #[error(transparent)]
    Synthesis(#[from] cuzk_synth::SynthError),
}

impl From<cuzk_ntt::NttError> for Error {
    fn from(e: cuzk_ntt::NttError) -> Self {
        Error::Ntt(Box::new(e))
    }
}
