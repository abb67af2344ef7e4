//! The errors of native witness generation: inputs the generic gadget would refuse.

/// An input the generic gadget refuses (it panics on these; the native one says why).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NativeError {
    /// `sha256` hashes whole bytes only.
    #[error("sha256 input of {bits} bits is not a whole number of bytes")]
    NotBytes {
        /// The input's length in bits.
        bits: usize,
    },
    /// `sha256_block_no_padding` compresses exactly one 512-bit block.
    #[error("sha256 block of {bits} bits, not 512")]
    NotOneBlock {
        /// The input's length in bits.
        bits: usize,
    },
    /// A label's replica id is 32 to 256 bits.
    #[error("label replica id of {bits} bits, not 32 to 256")]
    ReplicaId {
        /// The replica id's length in bits.
        bits: usize,
    },
    /// A label hashes `LABEL_PARENTS` parents.
    #[error("label of {count} parents, not 37")]
    Parents {
        /// The number of parents given.
        count: usize,
    },
    /// A label's parent fills one 256-bit slot.
    #[error("label parent {index} of {bits} bits, not 1 to 256")]
    Parent {
        /// Which parent.
        index: usize,
        /// Its length in bits.
        bits: usize,
    },
}

/// Why a PoRep partition's hybrid witness could not be made: inputs `StackedCompound::circuit`
/// would refuse or the circuit would panic on, or a generic gadget's error.
#[derive(Debug, thiserror::Error)]
pub enum PorepError {
    /// A partition has at least one challenge.
    #[error("no vanilla proofs: a partition has at least one challenge")]
    NoProofs,
    /// Every challenge's proof carries the same comm_c and comm_r_last.
    #[error("the vanilla proofs disagree on {0}")]
    Inconsistent(&'static str),
    /// The public inputs have no tau: no comm_d or comm_r to allocate.
    #[error("the public inputs have no tau (comm_d and comm_r)")]
    NoTau,
    /// A value the witness needs is absent (a blank proof's).
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A comm_d path level is one sibling and the node's side.
    #[error("comm_d path level {level} is not one sibling and a position")]
    CommDPath {
        /// The level, from the leaf.
        level: usize,
    },
    /// A label repeats 14 distinct parents (6 DRG ones in the first layer) to 37.
    #[error("{count} distinct label parents, not 14 (6 in the first layer)")]
    Parents {
        /// The distinct parents given.
        count: usize,
    },
    /// Every parent's column has the rows of the first DRG parent's, the layers.
    #[error("a parent column of {rows} rows where the first has {layers}")]
    Columns {
        /// The first DRG parent's rows.
        layers: usize,
        /// This column's.
        rows: usize,
    },
    /// The column hash takes 2 or 11 rows (storage-proofs' `hash_single_column`).
    #[error("columns of {layers} layers: the column hash takes 2 or 11")]
    ColumnHash {
        /// The rows of a column.
        layers: usize,
    },
    /// A Merkle path level has the siblings of its arity and the node's position.
    #[error("Merkle path level {level} is not the siblings of its arity and a position")]
    Path {
        /// The level, from the leaf.
        level: usize,
    },
    /// `insert` is hand-written for arities 2, 4 and 8, the ones Filecoin's trees have.
    #[error("a Poseidon tree of arity {arity}: only 2, 4 and 8 are replayed")]
    Arity {
        /// The arity.
        arity: usize,
    },
    /// A column proof's inclusion path could not be read back (see `porep::column_path`).
    #[error("a column proof's inclusion path: {0}")]
    ColumnPath(#[from] serde_json::Error),
    /// The native SHA-256 refused its input.
    #[error(transparent)]
    Native(#[from] NativeError),
    /// A generic gadget failed.
    #[error("generic synthesis: {0}")]
    Synthesis(#[from] bellperson::SynthesisError),
}
