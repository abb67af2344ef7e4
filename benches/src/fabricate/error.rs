//! The generator's and the self-check's errors.

use std::fmt;

/// Why a C1 output could not be fabricated or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SynthPoRep or NI-PoRep: their challenges are derived from comm_r, which a fabricated
    /// sector only has once its openings are chosen.
    #[error("{feature} cannot be fabricated: {}", NOT_INTERACTIVE)]
    NotInteractive {
        /// The feature the configuration enables.
        feature: String,
    },
    /// A sector size other than 2KiB, 8MiB, 512MiB, 32GiB and 64GiB.
    #[error("no fabricated C1 for sectors of {bytes} bytes (2KiB, 8MiB, 512MiB, 32GiB, 64GiB)")]
    UnsupportedSize {
        /// The sector size asked for.
        bytes: u64,
    },
    /// A name that is no sector size, API version, PoRep variant or output format.
    #[error("unknown {what} {found:?} (one of {expected})")]
    Unknown {
        /// What was named.
        what: &'static str,
        /// The name given.
        found: String,
        /// The names known.
        expected: &'static str,
    },
    /// filecoin-proofs-api's JSON (and Curio's envelope) needs a registered proof, which no
    /// API 1.2 interactive PoRep has.
    #[error("API {api} has no registered interactive PoRep in filecoin-proofs-api; its C1 output exists only as filecoin-proofs' own type (format json)")]
    NoRegisteredProof {
        /// The configuration's API version.
        api: String,
    },
    /// A step of filecoin-proofs failed.
    #[error("filecoin-proofs, {step}: {message}")]
    FilecoinProofs {
        /// The step.
        step: &'static str,
        /// filecoin-proofs' message.
        message: String,
    },
    /// The fabricated output failed its own self-check (a fault of the generator).
    #[error("the fabricated C1 output failed its self-check: {0}")]
    Check(#[from] CheckError),
    /// The output could not be encoded as JSON.
    #[error("encoding the C1 output as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    pub(crate) fn filecoin(step: &'static str, e: impl fmt::Display) -> Error {
        Error::FilecoinProofs {
            step,
            message: e.to_string(),
        }
    }
}

const NOT_INTERACTIVE: &str = "its challenges are derived from comm_r, which depends on the openings; only interactive PoRep, whose challenges depend on the replica id and the seed alone, can be fabricated";

/// Which opening of a challenge a check refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// The data leaf's path in comm_d.
    CommD,
    /// The replica leaf's path in comm_r_last.
    CommRLast,
    /// The challenged node's column in comm_c.
    Column,
    /// The column of the DRG parent in this slot (graph order, from 0).
    DrgParent(usize),
    /// The column of the expander parent in this slot (graph order, from 0).
    ExpParent(usize),
}

impl fmt::Display for Opening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opening::CommD => f.write_str("comm_d path"),
            Opening::CommRLast => f.write_str("comm_r_last path"),
            Opening::Column => f.write_str("column (comm_c)"),
            Opening::DrgParent(i) => write!(f, "DRG parent {i}'s column (comm_c)"),
            Opening::ExpParent(i) => write!(f, "expander parent {i}'s column (comm_c)"),
        }
    }
}

/// What is wrong with an opening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Its leaf is not the value it opens (for a column: the column's hash; a label changed).
    Leaf,
    /// Its leaf and siblings do not hash to the root it names (a sibling changed).
    Path,
    /// Its root is not the commitment the other openings share.
    Root,
    /// It opens another node.
    Index {
        /// The node it opens.
        found: usize,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Leaf => f.write_str("its leaf is not the hash of what it opens"),
            Problem::Path => f.write_str("its leaf and siblings do not hash to its root"),
            Problem::Root => f.write_str("its root is not the commitment the other openings share"),
            Problem::Index { found } => write!(f, "it opens node {found}"),
        }
    }
}

/// Why a C1 output is not consistent (the self-check's verdict). Challenges are named by
/// partition, position in the partition (both from 0) and node.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// SynthPoRep or NI-PoRep (see [`Error::NotInteractive`]).
    #[error("{feature} C1 outputs are not checked here: {}", NOT_INTERACTIVE)]
    NotInteractive {
        /// The feature the configuration enables.
        feature: String,
    },
    /// A sector size without a shape here.
    #[error("no check for sectors of {bytes} bytes")]
    UnsupportedSize {
        /// The sector size.
        bytes: u64,
    },
    /// A step of filecoin-proofs failed.
    #[error("filecoin-proofs, {step}: {message}")]
    FilecoinProofs {
        /// The step.
        step: &'static str,
        /// filecoin-proofs' message.
        message: String,
    },
    /// The replica id is not the one of this prover, sector, ticket, comm_d and porep id.
    #[error("the replica id {found} is not {expected}, the one of prover id {prover_id}, sector {sector}, the ticket, comm_d and porep id (another miner or sector?)")]
    ReplicaId {
        /// The C1 output's, hex.
        found: String,
        /// The derived one, hex.
        expected: String,
        /// The prover id, hex.
        prover_id: String,
        /// The sector number.
        sector: u64,
    },
    /// Not the configuration's number of partitions.
    #[error("{found} partitions, the configuration has {expected}")]
    Partitions {
        /// The configuration's.
        expected: usize,
        /// The C1 output's.
        found: usize,
    },
    /// A partition without one proof per challenge.
    #[error("partition {partition} has {found} challenge proofs, it has {expected} challenges")]
    Challenges {
        /// The partition.
        partition: usize,
        /// Its challenges.
        expected: usize,
        /// Its proofs.
        found: usize,
    },
    /// A challenge with another number of parent columns than the graph's degrees.
    #[error("partition {partition}, challenge {index} (node {node}): {} DRG and {} expander parent columns, the graph has {} and {}", found.0, found.1, expected.0, expected.1)]
    Parents {
        /// The partition.
        partition: usize,
        /// The challenge's position.
        index: usize,
        /// The challenged node.
        node: usize,
        /// DRG and expander parent columns in the proof.
        found: (usize, usize),
        /// The graph's DRG and expander degrees.
        expected: (usize, usize),
    },
    /// comm_r is not Poseidon(comm_c, comm_r_last) of the openings' roots.
    #[error("comm_r {found} is not {expected}, the hash of the openings' comm_c and comm_r_last")]
    CommR {
        /// The C1 output's, hex.
        found: String,
        /// Poseidon(comm_c, comm_r_last), hex.
        expected: String,
    },
    /// A label of a challenged node that does not recompute from its parents' columns.
    #[error("partition {partition}, challenge {index} (node {node}): its label at layer {layer} does not recompute from its parents' columns")]
    Label {
        /// The partition.
        partition: usize,
        /// The challenge's position.
        index: usize,
        /// The challenged node.
        node: usize,
        /// The layer (from 1).
        layer: usize,
    },
    /// A replica leaf that is not the last label plus the data leaf.
    #[error("partition {partition}, challenge {index} (node {node}): its comm_r_last leaf is not its last label plus its data")]
    Encoding {
        /// The partition.
        partition: usize,
        /// The challenge's position.
        index: usize,
        /// The challenged node.
        node: usize,
    },
    /// An opening that does not hold.
    #[error("partition {partition}, challenge {index} (node {node}): the {opening}: {problem}")]
    Opening {
        /// The partition.
        partition: usize,
        /// The challenge's position.
        index: usize,
        /// The challenged node.
        node: usize,
        /// Which opening.
        opening: Opening,
        /// What is wrong with it.
        problem: Problem,
    },
    /// filecoin-proofs' vanilla verification refused this challenge's proof, for a reason the
    /// checks before it do not name.
    #[error("partition {partition}, challenge {index} (node {node}): filecoin-proofs' vanilla verification refuses its proof")]
    Vanilla {
        /// The partition.
        partition: usize,
        /// The challenge's position.
        index: usize,
        /// The challenged node.
        node: usize,
    },
    /// filecoin-proofs' vanilla verification refused the proofs, though every challenge's
    /// proof verifies alone.
    #[error("filecoin-proofs' vanilla verification refuses the partitions (every challenge's proof verifies alone)")]
    VanillaRefused,
}

impl CheckError {
    pub(crate) fn filecoin(step: &'static str, e: impl fmt::Display) -> CheckError {
        CheckError::FilecoinProofs {
            step,
            message: e.to_string(),
        }
    }
}
