//! Circuit kinds by name, and the cache of each circuit's PCE and parameters.
//!
//! A kind is code (how to read inputs, build and synthesize the circuit); a request is
//! data (a kind's name and inputs). The kind turns inputs into an [`Instance`], which the
//! scheduler asks for its shape, partitions, witnesses and public inputs.

mod cache;

pub use cache::SetupError;
pub use cuzk_samples::{Sha256Kind, SyntheticPoRepKind};

use crate::SubmitError;
use cache::SetupCache;
use cuzk_groth16::Parameters;
use cuzk_plugin::{CircuitKind, InputError, Inputs, Instance, ParameterGenerator, Setup};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

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
        self.setup_held(instance, None, 0)
    }

    /// [`Registry::setup`] that also settles the setup's share of the budget it is counted in
    /// ([`Registry::count_setups_in`]): `building` is memory the caller reserved for making
    /// it, taken into that share; the share never leaves fewer than `keep_free` bytes (one
    /// partition of the circuit) beside the cached setups.
    pub fn setup_held(
        &self,
        instance: &dyn Instance,
        building: Option<cuzk_mem::Reservation>,
        keep_free: u64,
    ) -> Result<(Arc<Setup>, Duration), SetupError> {
        self.cache
            .get_or_make(instance, self.generator.as_deref(), building, keep_free)
    }

    /// Counts every setup cached from now on in the host `budget` while it stays cached
    /// (the scheduler gives its own; the first budget given stays).
    pub fn count_setups_in(&self, budget: cuzk_mem::Budget) {
        self.cache.count_in(budget);
    }

    /// Host bytes the cached setups hold in that budget.
    pub fn setup_bytes_held(&self) -> u64 {
        self.cache.held_bytes()
    }

    /// Host bytes the cached setups of circuits other than `circuit_key` hold in that budget.
    pub fn setup_bytes_held_except(&self, circuit_key: &str) -> u64 {
        self.cache.held_bytes_except(circuit_key)
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
