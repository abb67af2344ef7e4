//! The typed errors of Filecoin proving through cuzk: bad requests, bad parameter caches,
//! circuits that refuse their inputs, and proofs that fail their own check.

use std::path::PathBuf;

/// A boxed error from a pluggable prover backend (see [`crate::PartitionProver`]).
pub type BackendError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Shorthand for results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The proof kinds this crate produces, used to say which one failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// PoRep commit phase 2 (C2).
    PoRep,
    /// WinningPoSt.
    WinningPost,
    /// WindowPoSt (one partition or all).
    WindowPost,
    /// SnapDeals (empty sector update).
    SnapDeals,
}

impl std::fmt::Display for ProofKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProofKind::PoRep => "porep",
            ProofKind::WinningPost => "winning-post",
            ProofKind::WindowPost => "window-post",
            ProofKind::SnapDeals => "snap-deals",
        })
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The commit phase 1 output is not valid JSON of filecoin-proofs-api's
    /// `SealCommitPhase1Output` (truncated, or not that structure); `line`/`column` locate it.
    #[error("C1 output JSON ({len} bytes) is invalid at line {line}, column {column}: {message}")]
    C1Json {
        /// Length of the JSON given, in bytes.
        len: usize,
        /// Line of the error (1-based).
        line: usize,
        /// Column of the error (1-based).
        column: usize,
        /// What serde_json reported.
        message: String,
    },

    /// Curio's C1 wrapper (`{"SectorNum", "Phase1Out", "SectorSize"}`) carries a `Phase1Out`
    /// that is not valid base64.
    #[error("C1 wrapper's Phase1Out ({len} characters) is not valid base64: {message}")]
    C1Base64 {
        /// Length of the `Phase1Out` string.
        len: usize,
        /// What the decoder reported.
        message: String,
    },

    /// The registered proof names one sector size but the data belongs to another (for
    /// example a 2KiB vanilla proof under a 32GiB registered proof).
    #[error("{what}: registered proof {registered_proof} is for {expected} byte sectors, but the data is for {found} byte sectors")]
    SectorSizeMismatch {
        /// What carried the size (e.g. "C1 vanilla proofs", "Curio C1 wrapper").
        what: &'static str,
        /// The registered proof, as filecoin-proofs-api names it.
        registered_proof: String,
        /// Sector size of the registered proof, bytes.
        expected: u64,
        /// Sector size the data is for, bytes.
        found: u64,
    },

    /// A sector size filecoin-proofs has no circuit shape for.
    #[error("unsupported sector size {sector_size} bytes")]
    UnsupportedSectorSize {
        /// The sector size, bytes.
        sector_size: u64,
    },

    /// A numeric registered proof (as Lotus/Curio send it) that names no known proof.
    #[error("unknown {what} number {value}")]
    UnknownRegisteredProof {
        /// Which registry ("RegisteredSealProof", "RegisteredPoStProof", ...).
        what: &'static str,
        /// The number given.
        value: u64,
    },

    /// The registered proof is of the wrong type for the request (e.g. a WindowPoSt proof
    /// type for a WinningPoSt request).
    #[error(
        "{kind} request with registered proof {registered_proof}, which is not a {kind} proof type"
    )]
    WrongProofType {
        /// The proof requested.
        kind: ProofKind,
        /// The registered proof given.
        registered_proof: String,
    },

    /// A 32-byte commitment, randomness or prover id is not a canonical field element, or
    /// is all zeros where that is never valid.
    #[error("invalid {name} {hex}: {reason}")]
    InvalidCommitment {
        /// Which value ("comm_r", "comm_d", "seed", "randomness", "prover_id", ...).
        name: &'static str,
        /// The bytes, hex.
        hex: String,
        /// Why it is rejected.
        reason: &'static str,
    },

    /// A commitment CID (as Curio sends SnapDeals commitments) is not a Filecoin piece or
    /// sealed-sector commitment CID.
    #[error(
        "{name} is not a Filecoin commitment (raw 32 bytes or a commitment CID) ({hex}): {reason}"
    )]
    InvalidCid {
        /// Which value ("comm_r_old", "comm_r_new", "comm_d_new").
        name: &'static str,
        /// The bytes, hex.
        hex: String,
        /// What is wrong.
        reason: String,
    },

    /// A value that must be exactly 32 bytes is not.
    #[error("{name} must be 32 bytes, got {len}")]
    WrongLength {
        /// Which value.
        name: &'static str,
        /// Its length.
        len: usize,
    },

    /// The number of vanilla proofs (partitions, sectors) does not match the proof type.
    #[error("{kind}: expected {expected} {what}, got {found}")]
    VanillaCount {
        /// The proof requested.
        kind: ProofKind,
        /// What was counted ("partitions", "challenges in partition 0", "sectors").
        what: String,
        /// The count the proof type requires.
        expected: usize,
        /// The count given.
        found: usize,
    },

    /// A vanilla proof could not be decoded (bincode) for this sector size.
    #[error("{kind}: vanilla proof {index} ({len} bytes) does not decode: {message}")]
    VanillaDecode {
        /// The proof requested.
        kind: ProofKind,
        /// Index of the vanilla proof in the request.
        index: usize,
        /// Its length in bytes.
        len: usize,
        /// What the decoder reported.
        message: String,
    },

    /// filecoin-proofs rejected the vanilla proofs or public inputs before any circuit was
    /// built (they do not verify, or do not fit the proof type).
    #[error("{kind}: vanilla proofs rejected: {message}")]
    VanillaRejected {
        /// The proof requested.
        kind: ProofKind,
        /// filecoin-proofs' message (with its context chain).
        message: String,
    },

    /// The replica id in the C1 output is not the one derived from the prover id, sector id,
    /// ticket, comm_d and PoRep id given: the proof would not verify for this sector.
    #[error("C1 replica id {in_c1} is not the replica id {derived} of prover id {prover_id}, sector {sector_id}")]
    ReplicaIdMismatch {
        /// The replica id in the C1 output, hex.
        in_c1: String,
        /// The replica id derived from the request, hex.
        derived: String,
        /// The prover id given, hex.
        prover_id: String,
        /// The sector id given.
        sector_id: u64,
    },

    /// filecoin-proofs could not build the circuit of a partition from its vanilla proof.
    #[error("{circuit}: building the circuit of partition {partition} failed: {message}")]
    Circuit {
        /// The circuit (cache id).
        circuit: String,
        /// Partition index.
        partition: usize,
        /// filecoin-proofs' message.
        message: String,
    },

    /// Synthesizing a partition's witness failed (the circuit refused its assignment).
    #[error("{circuit}: witness synthesis of partition {partition} failed: {source}")]
    Synthesis {
        /// The circuit (cache id).
        circuit: String,
        /// Partition index.
        partition: usize,
        /// Why.
        #[source]
        source: cuzk_synth::SynthError,
    },

    /// A partition's native witness could not be made (where one was asked for alone: the
    /// proving path falls back to synthesis instead).
    #[error("{circuit}: native witness of partition {partition} failed: {reason}")]
    NativeWitness {
        /// The circuit (cache id).
        circuit: String,
        /// Partition index.
        partition: usize,
        /// Why (or that the circuit has no native generator).
        reason: String,
    },

    /// A partition's witness does not carry the public inputs the verifier will use: the
    /// vanilla proofs do not belong to these public values (randomness, commitments, ids).
    #[error("{circuit}: partition {partition} has public inputs that differ from the verifier's at input {index}")]
    PublicInputsMismatch {
        /// The circuit (cache id).
        circuit: String,
        /// Partition index.
        partition: usize,
        /// First differing input (0-based, ONE not counted), or the shorter length.
        index: usize,
    },

    /// The prover backend failed.
    #[error("{circuit}: proving {partitions} partition(s) failed: {source}")]
    Prover {
        /// The circuit (cache id).
        circuit: String,
        /// How many partitions were being proved.
        partitions: usize,
        /// The backend's error.
        #[source]
        source: BackendError,
    },

    /// The backend returned a different number of proofs than partitions it was given.
    #[error("{circuit}: the prover returned {found} proofs for {expected} partitions")]
    ProofCount {
        /// The circuit (cache id).
        circuit: String,
        /// Partitions given.
        expected: usize,
        /// Proofs returned.
        found: usize,
    },

    /// A proof failed the self-check against the verifying key: it is never returned.
    #[error("{circuit}: the proof of partition {partition} does not verify")]
    ProofInvalid {
        /// The circuit (cache id).
        circuit: String,
        /// Partition index.
        partition: usize,
    },

    /// filecoin-proofs failed in a step it owns (setup, aggregation).
    #[error("{kind}: filecoin-proofs failed in {step}: {message}")]
    FilecoinProofs {
        /// The proof requested.
        kind: ProofKind,
        /// Which step.
        step: &'static str,
        /// filecoin-proofs' message.
        message: String,
    },

    /// A parameter file is not in the cache and may not be generated for this sector size.
    #[error("parameters {} are missing (sector size {sector_size} bytes); fetch them into the parameter cache or allow generation up to this size", path.display())]
    MissingParameters {
        /// The file that was looked for.
        path: PathBuf,
        /// The circuit's sector size, bytes.
        sector_size: u64,
    },

    /// A parameter or verifying-key file does not have the digest it must have.
    #[error("{} has digest {found}, expected {expected} ({source_of_expected}); the file is corrupt or not the one named", path.display())]
    DigestMismatch {
        /// The file.
        path: PathBuf,
        /// The digest it must have (first 128 bits of BLAKE2b-512, hex).
        expected: String,
        /// The digest it has.
        found: String,
        /// Where the expected digest comes from ("parameters.json", "cuzk generation record").
        source_of_expected: &'static str,
    },

    /// A parameter file whose name filecoin-proofs' parameters.json does not list and that
    /// cuzk did not generate here: its digest cannot be checked.
    #[error("{} is not a known parameter file (not in parameters.json, not generated by cuzk); skip digest checks to use it", path.display())]
    UnknownParameterFile {
        /// The file.
        path: PathBuf,
    },

    /// A parameter file could not be read or decoded.
    #[error("parameters {}: {source}", path.display())]
    Parameters {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: cuzk_groth16::Error,
    },

    /// Parameters and the circuit's PCE disagree on the circuit's shape.
    #[error("parameters {} do not fit the circuit: {what} is {found} in the file, {expected} in the circuit", path.display())]
    ParametersShape {
        /// The parameter file.
        path: PathBuf,
        /// Which quantity.
        what: &'static str,
        /// The circuit's value.
        expected: usize,
        /// The file's value.
        found: usize,
    },

    /// Generating parameters failed.
    #[error("generating parameters for {circuit}: {source}")]
    Generate {
        /// The circuit (cache id).
        circuit: String,
        /// Why (the generator's error: the CPU reference's, or the GPU's).
        #[source]
        source: BackendError,
    },

    /// Recording a circuit's PCE failed.
    #[error("recording the PCE of {circuit}: {source}")]
    Record {
        /// The circuit (cache id).
        circuit: String,
        /// Why.
        #[source]
        source: cuzk_synth::SynthError,
    },

    /// Reading or writing a file of the cache failed.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}

/// Formats an `anyhow` error with its whole context chain, as filecoin-proofs reports them.
pub(crate) fn chain(e: &anyhow::Error) -> String {
    format!("{e:#}")
}
