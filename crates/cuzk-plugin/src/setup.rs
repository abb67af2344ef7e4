//! A circuit's setup as backends and kinds see it: its recorded constraints and parameters.

use crate::Shape;
use cuzk_groth16::{PreparedParameters, PreparedVerifyingKey, VerifyingKey};
use cuzk_synth::Pce;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// What every proof of one circuit shares: its recorded constraints and its parameters.
pub struct Setup {
    /// The circuit's key.
    pub circuit_key: String,
    /// The recorded constraints (shared: a kind that loads its own setup may hold them too).
    pub pce: Arc<Pce>,
    /// The parameters, ready for proving (shared, so that a device backend can place them
    /// on its devices without copying them).
    pub params: Arc<PreparedParameters>,
    /// The verifying key.
    pub vk: VerifyingKey,
    /// The verifying key, ready for verifying.
    pub pvk: PreparedVerifyingKey,
    /// Whether the parameters were generated here (random toxic waste: good for tests and
    /// benchmarks only) rather than supplied or loaded by the kind.
    pub generated: bool,
    /// What made them: `supplied`, `cpu`, a backend's generator (`gpu`), or what the kind
    /// says it loaded them from.
    pub generator: String,
}

/// A setup a circuit kind loads itself ([`Instance::load_setup`]): its recorded constraints
/// and its parameters, e.g. a ceremony's parameter file and the PCE kept beside it.
#[derive(Clone)]
pub struct ReadySetup {
    /// The recorded constraints.
    pub pce: Arc<Pce>,
    /// The parameters (their verifying key included).
    pub params: Arc<PreparedParameters>,
    /// Where they came from, for logs and [`Setup::generator`] (e.g. a file name).
    pub source: String,
}

impl fmt::Debug for ReadySetup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadySetup")
            .field("shape", &Shape::of(&self.pce))
            .field("params", &self.params)
            .field("source", &self.source)
            .finish()
    }
}

/// Why a kind could not load its setup: the kind's own error. A [`MissingFile`] is
/// reported as [`SetupError::MissingFile`].
pub type LoadError = Box<dyn std::error::Error + Send + Sync>;

/// A file a kind loads its setup from (a ceremony's parameter file) is not there: the
/// host lacks it, the request is not at fault. Kinds return it as their [`LoadError`].
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
#[error("{reason}")]
pub struct MissingFile {
    /// The file looked for.
    pub path: PathBuf,
    /// The kind's message, naming the file and what to do about it.
    pub reason: String,
}

impl Setup {
    /// The circuit's exact shape.
    pub fn shape(&self) -> Shape {
        Shape::of(&self.pce)
    }

    /// Host bytes of the parameters' query points.
    pub fn parameter_bytes(&self) -> u64 {
        self.params.host_bytes()
    }

    /// Host bytes the setup holds: the parameters' points and the PCE's matrices.
    pub fn host_bytes(&self) -> u64 {
        self.parameter_bytes() + self.pce.heap_bytes()
    }
}

impl fmt::Debug for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The PCE and parameters can hold billions of entries: show their sizes only.
        f.debug_struct("Setup")
            .field("circuit_key", &self.circuit_key)
            .field("shape", &self.shape())
            .field("params", &self.params)
            .field("generated", &self.generated)
            .finish()
    }
}
