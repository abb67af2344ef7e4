//! Circuit kinds by name, and the cache of each circuit's PCE and parameters.
//!
//! A kind is code (how to read inputs, build and synthesize the circuit); a request is
//! data (a kind's name and inputs). The kind turns inputs into an [`Instance`], which the
//! scheduler asks for its shape, partitions, witnesses and public inputs.

mod cache;
mod inputs;
mod sha256;
mod synthetic;

pub use cache::{LoadError, MissingFile, ReadySetup, Setup, SetupError};
pub use inputs::InputError;
pub use sha256::Sha256Kind;
pub use synthetic::SyntheticPoRepKind;

use crate::{Inputs, ParameterGenerator, Shape, SubmitError};
use cache::SetupCache;
use cuzk_field::Scalar;
use cuzk_groth16::{Parameters, Proof};
use cuzk_synth::{Pce, SynthError, Witness};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// A circuit kind: reads a request's inputs into an [`Instance`].
pub trait CircuitKind: Send + Sync + 'static {
    /// The name requests use, e.g. `sha256`.
    fn name(&self) -> &str;

    /// Checks and reads `inputs`. Runs on the submitting thread, so it must be cheap: no
    /// synthesis, no parameter work.
    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError>;

    /// An instance whose circuit key is `circuit_key`, if this kind makes such circuits and
    /// the key alone fixes the shape (for preloading parameters by key, as `PreloadSRS`
    /// asks). Its witnesses need not be meaningful: only its setup is used. The default:
    /// `None`.
    fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let _ = circuit_key;
        None
    }

    /// The public ids of this kind's circuits that any caller may ask to preload
    /// ([`crate::Scheduler::preload_named`], the daemon's `PreloadSRS`), in their canonical
    /// spelling, e.g. Curio's `porep-32g`. Each must be accepted by
    /// [`CircuitKind::instance_for_key`]. A kind whose keys name circuits of any size (a
    /// caller could ask for a huge setup) lists none: its circuits are preloaded only when
    /// trusted ([`Registry::trust_for_preload`]) or already set up. The default: none.
    fn preload_ids(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether `id` is one of [`CircuitKind::preload_ids`], maybe in another spelling the
    /// kind accepts (`porep-32GiB`). The default: listed there as given.
    fn serves_preload_id(&self, id: &str) -> bool {
        self.preload_ids().iter().any(|p| p == id)
    }

    /// The public id ([`CircuitKind::preload_ids`]) of the circuit whose setup key is
    /// `circuit_key`, when it is one of them (to report setups as callers name them). The
    /// default: `None`.
    fn public_id(&self, circuit_key: &str) -> Option<String> {
        let _ = circuit_key;
        None
    }
}

/// One request's circuit: everything the scheduler asks of it. Calls may panic or fail;
/// either fails only this job.
pub trait Instance: Send + Sync + fmt::Debug + 'static {
    /// The key of the circuit's shape (its PCE and parameters), e.g.
    /// `synthetic-porep-1024`: instances with equal keys share them.
    fn circuit_key(&self) -> String;

    /// How many partitions (independent proofs of the same circuit) the job has; at least 1.
    fn partitions(&self) -> usize;

    /// The circuit's shape, estimated before its PCE is recorded (for memory admission).
    fn shape(&self) -> Shape;

    /// Records the circuit's PCE (done once per key; the cache keeps it).
    fn record(&self) -> Result<Pce, SynthError>;

    /// The witness of partition `partition`.
    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError>;

    /// [`Instance::synthesize`] in the memory of `spare`, a witness of an earlier partition
    /// that is no longer needed (see [`cuzk_synth::WitnessCs::reusing`]); the witness must be
    /// the same. The default drops `spare` and synthesizes afresh.
    fn synthesize_reusing(
        &self,
        pce: &Pce,
        partition: usize,
        spare: Witness,
    ) -> Result<Witness, SynthError> {
        drop(spare);
        self.synthesize(pce, partition)
    }

    /// The public inputs of partition `partition`, ONE not included, as the verifier takes
    /// them.
    fn public_inputs(&self, partition: usize) -> Vec<Scalar>;

    /// The circuit's setup, when the kind loads it itself (a ceremony's parameter file and
    /// the PCE kept beside it) rather than having it recorded here ([`Instance::record`])
    /// with supplied or generated parameters. Called once per circuit key, on a synthesis
    /// worker (it may take long). The default, `None`, records and generates.
    fn load_setup(&self) -> Option<Result<ReadySetup, LoadError>> {
        None
    }

    /// Whether the job's proof is made from its partitions' proofs by [`Instance::finish`]
    /// (a NI-PoRep's SnarkPack aggregate) rather than being their 192-byte encodings back to
    /// back. The default: `false`.
    fn finishes(&self) -> bool {
        false
    }

    /// The job's proof from its partitions' proofs, in partition order, once every one is
    /// proved (and verified, when the scheduler verifies). Called only when
    /// [`Instance::finishes`], once per job, on a thread of its own outside the scheduler's
    /// lock; an error fails the job. The default concatenates the proofs' encodings.
    fn finish(&self, proofs: &[Proof]) -> Result<Vec<u8>, LoadError> {
        Ok(proofs.iter().flat_map(|p| p.to_bytes()).collect())
    }
}

/// A kind named `name` is already registered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// A kind named `name` is already registered.
    #[error("a circuit kind named {name:?} is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// The circuit kinds a scheduler serves, and the setups (PCE and parameters) made for
/// them so far.
pub struct Registry {
    kinds: BTreeMap<String, Arc<dyn CircuitKind>>,
    cache: SetupCache,
    generator: Option<Arc<dyn ParameterGenerator>>,
    /// Circuits a trusted caller set up by kind and inputs ([`Registry::trust_for_preload`]),
    /// by key: preloadable by that key again, also after an eviction.
    trusted: Mutex<BTreeMap<String, Arc<dyn Instance>>>,
}

impl Registry {
    /// A registry with no kinds.
    pub fn empty() -> Registry {
        Registry {
            kinds: BTreeMap::new(),
            cache: SetupCache::default(),
            generator: None,
            trusted: Mutex::new(BTreeMap::new()),
        }
    }

    /// A registry with the built-in kinds: `sha256` and `synthetic-porep`.
    pub fn with_builtins() -> Registry {
        let mut registry = Registry::empty();
        for kind in [
            Arc::new(Sha256Kind) as Arc<dyn CircuitKind>,
            Arc::new(SyntheticPoRepKind::default()),
        ] {
            registry
                .register(kind)
                .expect("built-in names are distinct");
        }
        registry
    }

    /// Adds a kind under its name.
    pub fn register(&mut self, kind: Arc<dyn CircuitKind>) -> Result<(), RegistryError> {
        let name = kind.name().to_string();
        if self.kinds.contains_key(&name) {
            return Err(RegistryError::Duplicate { name });
        }
        self.kinds.insert(name, kind);
        Ok(())
    }

    /// The registered kinds' names, sorted.
    pub fn kind_names(&self) -> Vec<String> {
        self.kinds.keys().cloned().collect()
    }

    /// Reads `inputs` with kind `kind`.
    pub fn parse(&self, kind: &str, inputs: &Inputs) -> Result<Arc<dyn Instance>, SubmitError> {
        let k = self
            .kinds
            .get(kind)
            .ok_or_else(|| SubmitError::UnknownKind {
                kind: kind.to_string(),
                known: self.kind_names(),
            })?;
        let invalid = |source| SubmitError::InvalidInput {
            kind: kind.to_string(),
            source,
        };
        let instance = k.parse(inputs).map_err(invalid)?;
        if instance.partitions() == 0 {
            return Err(invalid(InputError::Invalid {
                reason: "the request has no partitions".into(),
            }));
        }
        Ok(instance)
    }

    /// Parameters to use for circuit `circuit_key` instead of generating them; taken when
    /// its setup is made (so supply them before the first job of that circuit).
    pub fn supply_parameters(&self, circuit_key: impl Into<String>, params: Parameters) {
        self.cache.supply(circuit_key.into(), params);
    }

    /// Generates parameters with `generator` (falling back to the CPU generator when it
    /// fails) for circuits none were supplied for.
    pub fn set_generator(&mut self, generator: Arc<dyn ParameterGenerator>) {
        self.generator = Some(generator);
    }

    /// Whether a parameter generator other than the CPU one is set.
    pub fn has_generator(&self) -> bool {
        self.generator.is_some()
    }

    /// The setup of `instance`'s circuit, made now if it is not cached (blocking: recording
    /// and parameter generation can take long), and the time it took to obtain.
    pub fn setup(&self, instance: &dyn Instance) -> Result<(Arc<Setup>, Duration), SetupError> {
        self.cache.get_or_make(instance, self.generator.as_deref())
    }

    /// An instance of circuit `circuit_key` from the first kind that makes one from the key
    /// alone ([`CircuitKind::instance_for_key`]).
    pub fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        self.kinds
            .values()
            .find_map(|k| k.instance_for_key(circuit_key))
    }

    /// The public preload ids of every kind ([`CircuitKind::preload_ids`]), by kind name
    /// order.
    pub fn preload_ids(&self) -> Vec<String> {
        self.kinds.values().flat_map(|k| k.preload_ids()).collect()
    }

    /// An instance of the circuit public preload id `id` names, when a kind serves it
    /// ([`CircuitKind::serves_preload_id`]).
    pub fn public_instance(&self, id: &str) -> Option<Arc<dyn Instance>> {
        self.kinds
            .values()
            .filter(|k| k.serves_preload_id(id))
            .find_map(|k| k.instance_for_key(id))
    }

    /// How callers name circuit `circuit_key`: its kind's public id
    /// ([`CircuitKind::public_id`]), else the key itself.
    pub fn public_id(&self, circuit_key: &str) -> String {
        self.kinds
            .values()
            .find_map(|k| k.public_id(circuit_key))
            .unwrap_or_else(|| circuit_key.to_string())
    }

    /// Lets [`crate::Scheduler::preload_named`] set `instance`'s circuit up again by its key
    /// (a circuit the operator's configuration preloads, say). The instance is kept: only
    /// its setup is used.
    pub fn trust_for_preload(&self, instance: Arc<dyn Instance>) {
        self.trusted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(instance.circuit_key(), instance);
    }

    /// The keys of the circuits [`Registry::trust_for_preload`] was given, sorted.
    pub fn trusted_keys(&self) -> Vec<String> {
        let trusted = self.trusted.lock().unwrap_or_else(PoisonError::into_inner);
        trusted.keys().cloned().collect()
    }

    /// The trusted instance of circuit `circuit_key`, if [`Registry::trust_for_preload`]
    /// was given one.
    pub fn trusted(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let trusted = self.trusted.lock().unwrap_or_else(PoisonError::into_inner);
        trusted.get(circuit_key).cloned()
    }

    /// Forgets the cached setup of `circuit_key` and returns it (jobs holding it keep it
    /// until they end; the next job of the circuit sets it up again).
    pub fn evict(&self, circuit_key: &str) -> Option<Arc<Setup>> {
        self.cache.evict(circuit_key)
    }

    /// The cached setup of circuit `circuit_key`, if made.
    pub fn cached(&self, circuit_key: &str) -> Option<Arc<Setup>> {
        self.cache.get(circuit_key)
    }

    /// The keys of every cached setup, sorted.
    pub fn cached_keys(&self) -> Vec<String> {
        self.cache.keys()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("kinds", &self.kind_names())
            .field("cached", &self.cached_keys())
            .field("generator", &self.generator.as_ref().map(|g| g.name()))
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::with_builtins()
    }
}
