//! The setup cache: each circuit's PCE and parameters, made once and shared by its jobs.

use cuzk_groth16::{generate_parameters, prepare_verifying_key, Parameters, PreparedParameters};
use cuzk_mem::{Budget, Reservation};
use cuzk_plugin::{Instance, LoadError, MissingFile, ParameterGenerator, ReadySetup, Setup};
use cuzk_synth::{Pce, SynthError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Why a circuit's setup could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Recording circuit `circuit_key`'s constraints failed.
    #[error("recording the constraints of {circuit_key} failed: {source}")]
    Record {
        /// The circuit.
        circuit_key: String,
        /// The synthesis error.
        #[source]
        source: SynthError,
    },

    /// Generating parameters for circuit `circuit_key` failed.
    #[error("generating parameters for {circuit_key} failed: {source}")]
    Generate {
        /// The circuit.
        circuit_key: String,
        /// The generator's error (boxed: it is large).
        #[source]
        source: Box<cuzk_groth16::Error>,
    },

    /// The circuit kind could not load circuit `circuit_key`'s setup (missing or corrupt
    /// parameter files, say).
    #[error("loading the setup of {circuit_key} failed: {source}")]
    Load {
        /// The circuit.
        circuit_key: String,
        /// The kind's error.
        #[source]
        source: LoadError,
    },

    /// A file circuit `circuit_key`'s kind loads its setup from is missing (`path`).
    #[error("loading the setup of {circuit_key} failed: {reason}")]
    MissingFile {
        /// The circuit.
        circuit_key: String,
        /// The missing file.
        path: PathBuf,
        /// The kind's message, naming the file.
        reason: String,
    },

    /// The parameters supplied for circuit `circuit_key` have `found` entries in `what`
    /// where the circuit has `expected`.
    #[error("parameters supplied for {circuit_key} do not fit it: {what} has {found} entries, the circuit {expected}")]
    Mismatch {
        /// The circuit.
        circuit_key: String,
        /// The query that disagrees.
        what: &'static str,
        /// What the circuit needs.
        expected: usize,
        /// What the parameters have.
        found: usize,
    },
}

impl SetupError {
    /// The missing file, when the setup failed for lack of one
    /// ([`SetupError::MissingFile`]): a precondition of the host, not a fault of the request.
    pub fn missing_file(&self) -> Option<&Path> {
        match self {
            SetupError::MissingFile { path, .. } => Some(path),
            _ => None,
        }
    }
}

/// One key's setup, made by whoever takes `making` first while the others wait.
#[derive(Default)]
struct Slot {
    /// The setup once made: locked only to read or swap it, never while making one, so a
    /// reader never mistakes a made setup for one being made.
    ready: Mutex<Option<Arc<Setup>>>,
    /// Held for the whole making of the setup.
    making: Mutex<()>,
}

impl Slot {
    fn ready(&self) -> Option<Arc<Setup>> {
        lock(&self.ready).clone()
    }
}

/// Setups by circuit key, and parameters supplied for keys not yet set up.
#[derive(Default)]
pub(super) struct SetupCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    supplied: Mutex<HashMap<String, Parameters>>,
    /// The host budget cached setups are counted in ([`SetupCache::count_in`]).
    budget: OnceLock<Budget>,
    /// Each cached setup's share of that budget, held until it is evicted.
    held: Mutex<HashMap<String, Reservation>>,
}

/// A panic while making a setup leaves its slot empty (the next job retries), so a
/// poisoned lock holds nothing inconsistent.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SetupCache {
    /// Counts every setup cached from now on in `budget` for as long as it stays cached
    /// (its parameters' points and PCE, [`Setup::host_bytes`]), so that partitions are not
    /// admitted into memory a setup holds. The first budget given stays.
    pub(super) fn count_in(&self, budget: Budget) {
        let _ = self.budget.set(budget);
    }

    /// Bytes the cached setups hold in the budget.
    pub(super) fn held_bytes(&self) -> u64 {
        lock(&self.held).values().map(Reservation::bytes).sum()
    }

    /// Bytes the cached setups of circuits other than `key` hold in the budget.
    pub(super) fn held_bytes_except(&self, key: &str) -> u64 {
        lock(&self.held)
            .iter()
            .filter(|(k, _)| k.as_str() != key)
            .map(|(_, r)| r.bytes())
            .sum()
    }

    /// Brings `setup`'s share of the budget up to its bytes ([`Setup::host_bytes`]) as far as
    /// the budget can grant now, taking `building` (what its making reserved) first, and
    /// never so far that fewer than `keep_free` bytes (one partition of the circuit) would be
    /// left beside all cached setups: its jobs can always start. Called when the setup is
    /// made and whenever a job finds it cached, so a share first granted in part (partitions
    /// in flight held the rest) grows once they end. A share short of the setup's bytes is
    /// logged once.
    fn hold(&self, setup: &Setup, building: Option<Reservation>, keep_free: u64) {
        let Some(budget) = self.budget.get() else {
            return;
        };
        let key = &setup.circuit_key;
        let bytes = setup.host_bytes();
        let room = budget
            .capacity()
            .saturating_sub(keep_free.saturating_add(self.held_bytes_except(key)));
        let target = bytes.min(room);
        let mut held = lock(&self.held);
        let had = held.get(key).map_or(0, Reservation::bytes);
        if had >= target && building.is_none() {
            return;
        }
        let mut share = match (held.remove(key), building) {
            (Some(mut r), Some(b)) => {
                let _ = r.merge(b);
                r
            }
            (Some(r), None) | (None, Some(r)) => r,
            (None, None) => match budget.try_reserve_up_to(0, target) {
                Ok(r) => r,
                Err(_) => return,
            },
        };
        if share.bytes() < target {
            if let Ok(more) = budget.try_reserve_up_to(0, target - share.bytes()) {
                let _ = share.merge(more);
            }
        }
        share.shrink_to(target);
        if share.bytes() < bytes && had == 0 {
            tracing::warn!(
                circuit = %key,
                bytes,
                counted = share.bytes(),
                budget = budget.name(),
                "the setup holds more host memory than its share of the budget: only part of it is counted"
            );
        }
        held.insert(key.clone(), share);
    }

    pub(super) fn supply(&self, key: String, params: Parameters) {
        lock(&self.supplied).insert(key, params);
    }

    /// The setup of `key` if it is made; never waits for one being made (submission asks
    /// this and must not block behind a parameter generation).
    pub(super) fn get(&self, key: &str) -> Option<Arc<Setup>> {
        let slot = lock(&self.slots).get(key).cloned()?;
        slot.ready()
    }

    pub(super) fn keys(&self) -> Vec<String> {
        let slots: Vec<(String, Arc<Slot>)> = lock(&self.slots)
            .iter()
            .map(|(k, s)| (k.clone(), Arc::clone(s)))
            .collect();
        let mut keys: Vec<String> = slots
            .into_iter()
            // A slot being made is not listed: it is not cached yet.
            .filter(|(_, s)| s.ready().is_some())
            .map(|(k, _)| k)
            .collect();
        keys.sort();
        keys
    }

    /// The setup of `instance`'s circuit and the time spent obtaining it (waiting for
    /// another job that is making it included). Errors are not cached: the next job of
    /// the circuit tries again.
    ///
    /// `building`: memory the caller reserved for making the setup; when this call makes it,
    /// the reservation becomes the cached setup's share of the budget ([`SetupCache::count_in`]).
    /// `keep_free`: bytes the budget must keep beside the cached setups for one partition of
    /// this circuit ([`SetupCache::hold`]).
    pub(super) fn get_or_make(
        &self,
        instance: &dyn Instance,
        generator: Option<&dyn ParameterGenerator>,
        mut building: Option<Reservation>,
        keep_free: u64,
    ) -> Result<(Arc<Setup>, Duration), SetupError> {
        let start = Instant::now();
        let key = instance.circuit_key();
        let slot = Arc::clone(lock(&self.slots).entry(key.clone()).or_default());
        // The share is taken under the `ready` guard, so that an eviction (which forgets the
        // share under the same guard) cannot slip between finding the setup and holding it.
        if let Some(setup) = self.held_if_ready(&slot, &mut building, keep_free) {
            // Found made without waiting: this job took no setup time.
            return Ok((setup, Duration::ZERO));
        }
        // Concurrent jobs of this circuit wait here for the one making the setup instead
        // of each generating parameters; other circuits are not held up. The wait counts as
        // the job's setup time. A panic while making leaves nothing made: the next retries.
        // Slots stay in the map once made (an eviction empties them), so every job of a key
        // waits on the same `making`.
        let _making = slot.making.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(setup) = self.held_if_ready(&slot, &mut building, keep_free) {
            return Ok((setup, start.elapsed()));
        }
        let setup = Arc::new(self.make(key, instance, generator)?);
        let mut ready = lock(&slot.ready);
        self.hold(&setup, building, keep_free);
        *ready = Some(Arc::clone(&setup));
        Ok((setup, start.elapsed()))
    }

    /// The slot's setup, if made, with its share of the budget held ([`SetupCache::hold`],
    /// `building` taken), both under the slot's `ready` guard.
    fn held_if_ready(
        &self,
        slot: &Slot,
        building: &mut Option<Reservation>,
        keep_free: u64,
    ) -> Option<Arc<Setup>> {
        let ready = lock(&slot.ready);
        let setup = ready.as_ref()?;
        self.hold(setup, building.take(), keep_free);
        Some(Arc::clone(setup))
    }

    /// Forgets the setup of `key` and returns it, if it is made (a setup being made is left
    /// alone). Jobs holding it keep it until they end.
    pub(super) fn evict(&self, key: &str) -> Option<Arc<Setup>> {
        let slots = lock(&self.slots);
        // The slot stays (empty), so that jobs waiting to make it and later ones share it.
        let mut ready = lock(&slots.get(key)?.ready);
        let setup = ready.take()?;
        lock(&self.held).remove(key);
        Some(setup)
    }

    fn make(
        &self,
        circuit_key: String,
        instance: &dyn Instance,
        generator: Option<&dyn ParameterGenerator>,
    ) -> Result<Setup, SetupError> {
        let span = tracing::info_span!("setup", circuit = %circuit_key);
        let _enter = span.enter();
        let start = Instant::now();
        if let Some(loaded) = instance.load_setup() {
            let ReadySetup {
                pce,
                params,
                source,
            } = loaded.map_err(|source| match source.downcast::<MissingFile>() {
                Ok(missing) => SetupError::MissingFile {
                    circuit_key: circuit_key.clone(),
                    path: missing.path,
                    reason: missing.reason,
                },
                Err(source) => SetupError::Load {
                    circuit_key: circuit_key.clone(),
                    source,
                },
            })?;
            let vk = params.vk().clone();
            let pvk = prepare_verifying_key(&vk);
            tracing::info!(
                constraints = pce.num_constraints,
                aux = pce.num_aux,
                source = %source,
                ms = start.elapsed().as_millis() as u64,
                "circuit set up from the kind's own files"
            );
            return Ok(Setup {
                circuit_key,
                pce,
                params,
                vk,
                pvk,
                generated: false,
                generator: source,
            });
        }
        let pce = instance.record().map_err(|source| SetupError::Record {
            circuit_key: circuit_key.clone(),
            source,
        })?;
        let supplied = lock(&self.supplied).remove(&circuit_key);
        let generated = supplied.is_none();
        let (params, made_by) = match supplied {
            Some(params) => {
                check_fit(&circuit_key, &pce, &params)?;
                (params, "supplied".to_string())
            }
            None => generate(&circuit_key, &pce, generator)?,
        };
        let vk = params.vk.clone();
        let pvk = prepare_verifying_key(&vk);
        let params = Arc::new(PreparedParameters::from(params));
        tracing::info!(
            constraints = pce.num_constraints,
            aux = pce.num_aux,
            generated,
            generator = %made_by,
            ms = start.elapsed().as_millis() as u64,
            "circuit set up"
        );
        Ok(Setup {
            circuit_key,
            pce: Arc::new(pce),
            params,
            vk,
            pvk,
            generated,
            generator: made_by,
        })
    }
}

/// Fresh parameters from `generator` when there is one and it succeeds, else from the CPU
/// generator; and the name of what made them.
fn generate(
    circuit_key: &str,
    pce: &Pce,
    generator: Option<&dyn ParameterGenerator>,
) -> Result<(Parameters, String), SetupError> {
    if let Some(g) = generator {
        match g.generate(circuit_key, pce) {
            Ok(params) => {
                check_fit(circuit_key, pce, &params)?;
                return Ok((params, g.name().to_string()));
            }
            Err(e) => tracing::warn!(
                circuit = %circuit_key,
                generator = g.name(),
                error = %e,
                "parameter generation failed; generating on the CPU instead"
            ),
        }
    }
    let params = generate_parameters(pce, &mut rand::rngs::OsRng).map_err(|source| {
        SetupError::Generate {
            circuit_key: circuit_key.to_string(),
            source: Box::new(source),
        }
    })?;
    Ok((params, "cpu".to_string()))
}

/// The cheap checks that supplied parameters belong to this circuit; the prover checks
/// the rest of the shapes before any expensive work.
fn check_fit(circuit_key: &str, pce: &Pce, params: &Parameters) -> Result<(), SetupError> {
    for (what, expected, found) in [
        ("vk.ic", pce.num_inputs, params.vk.ic.len()),
        ("l", pce.num_aux, params.l.len()),
    ] {
        if expected != found {
            return Err(SetupError::Mismatch {
                circuit_key: circuit_key.to_string(),
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}
