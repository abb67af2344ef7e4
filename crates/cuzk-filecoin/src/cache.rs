//! The parameter cache: Filecoin's `v28-*.params` folder, read (and for small test sectors
//! written) in exactly the layout filecoin-proofs reads, plus cuzk's PCE files beside it.
//!
//! For a circuit whose filecoin-proofs cache id is `X` (`<prefix>-<sha256 of the public
//! parameters' identifier>`), the folder holds:
//!
//! | file                   | written by                 | content                                        |
//! |------------------------|----------------------------|------------------------------------------------|
//! | `v28-X.params`         | ceremony / cuzk generator  | Groth16 parameters, bellperson's format         |
//! | `v28-X.vk`             | ceremony / cuzk generator  | the verifying key (the `.params` prefix)        |
//! | `v28-X.meta`           | filecoin-proofs / cuzk     | `{"sector_size":N}`                             |
//! | `v28-X.cuzk-pce`       | cuzk                       | the circuit's recorded A/B/C (`Pce::save`)      |
//! | `v28-X.cuzk-gen.json`  | cuzk generator             | the digests of the `.params`/`.vk` it wrote     |
//! | `v28-X.cuzk-lock`      | cuzk                       | empty; locked while a process creates files     |
//!
//! Digests are filecoin-proofs' (the first 128 bits of the file's BLAKE2b-512, hex). A
//! `.params` file must match `parameters.json` (embedded in storage-proofs-core) or, where
//! the policy allows generation for its sector size, the record cuzk wrote when it generated
//! it; otherwise it is refused unless digest checks are skipped explicitly.

mod files;

pub use files::file_digest;
use files::{write_atomic, DigestReader, Writer};

use crate::adapter::Sequential;
use crate::error::{BackendError, Error, ProofKind, Result};
use crate::progress::Ticker;
use bellpepper_core::Circuit;
use cuzk_field::Scalar;
use cuzk_groth16::{Parameters, PreparedParameters, PreparedVerifyingKey};
use cuzk_plugin::ParameterGenerator;
use cuzk_synth::Pce;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use storage_proofs_core::parameter_cache::{self, VERSION};

/// Buffer for the large sequential reads and writes of parameter files.
const IO_BUFFER: usize = 8 << 20;
/// How often long work (generation, recording) logs that it is still running.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// One circuit of filecoin-proofs: which proof it serves, its cache id and sector size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CircuitId {
    /// The proof the circuit serves.
    pub kind: ProofKind,
    /// filecoin-proofs' cache id (`<prefix>-<hash>`, no version and no extension).
    pub cache_id: String,
    /// Sector size, bytes.
    pub sector_size: u64,
}

impl CircuitId {
    /// `v28-<id>.params`, the name filecoin-proofs reads.
    pub fn params_file(&self) -> String {
        parameter_cache::parameter_id(&self.cache_id)
    }

    /// `v28-<id>.vk`.
    pub fn vk_file(&self) -> String {
        parameter_cache::verifying_key_id(&self.cache_id)
    }

    /// `v28-<id>.meta`.
    pub fn meta_file(&self) -> String {
        parameter_cache::metadata_id(&self.cache_id)
    }

    /// `v28-<id>.cuzk-pce`, cuzk's recorded circuit.
    pub fn pce_file(&self) -> String {
        format!("v{VERSION}-{}.cuzk-pce", self.cache_id)
    }

    /// `v28-<id>.cuzk-gen.json`, the digests of parameters cuzk generated.
    pub fn generation_record_file(&self) -> String {
        format!("v{VERSION}-{}.cuzk-gen.json", self.cache_id)
    }

    fn lock_file(&self) -> String {
        format!("v{VERSION}-{}.cuzk-lock", self.cache_id)
    }
}

impl std::fmt::Display for CircuitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}B ({})", self.kind, self.sector_size, self.cache_id)
    }
}

/// Whether parameter digests are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestCheck {
    /// Every `.params` file is hashed while it is read and must match its expected digest.
    Verify,
    /// No digest is computed: for parameter files made elsewhere that no manifest lists.
    Skip,
}

/// Where the cache generates missing parameters (see [`CachePolicy::generate_up_to`]).
#[derive(Clone, Default)]
pub enum Generator {
    /// cuzk's CPU generator (`cuzk_groth16::generate_parameters`).
    #[default]
    Cpu,
    /// A backend's generator (`Backend::parameter_generator`: the CUDA backend's makes the
    /// same parameters for the same toxic waste with the query points multiplied on a GPU,
    /// 2^27 constraints in under a minute on an H200). When it fails, the CPU generator
    /// runs instead, with a warning.
    Backend(Arc<dyn ParameterGenerator>),
}

impl Generator {
    /// The backend's generator if it has one, else the CPU's.
    pub fn of(backend: &dyn cuzk_plugin::AnyBackend) -> Generator {
        backend
            .parameter_generator()
            .map_or(Generator::Cpu, Generator::Backend)
    }
}

impl PartialEq for Generator {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Generator::Cpu, Generator::Cpu) => true,
            (Generator::Backend(a), Generator::Backend(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Generator {}

impl std::fmt::Debug for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for Generator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Generator::Cpu => f.write_str("cpu"),
            Generator::Backend(g) => f.write_str(g.name()),
        }
    }
}

/// What the cache may do beyond reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachePolicy {
    /// Missing parameters of circuits whose sector size is at most this many bytes are
    /// generated with cuzk's generator (a trusted setup fit for tests only); 0 never
    /// generates.
    pub generate_up_to: u64,
    /// Where generation runs.
    pub generator: Generator,
    /// Digest checking of parameter files.
    pub digests: DigestCheck,
    /// Whether recorded PCEs are saved beside the parameters (and loaded from there).
    pub pce_on_disk: bool,
    /// Whether parameters cuzk generates are written to their `.params` file (by a
    /// background thread, after the proof that needed them has its parameters). Also
    /// skipped, with a warning, when the folder's filesystem has less room than the file
    /// plus [`DISK_MARGIN`] (a 32 GiB sector's file is 47 GiB). Without the file the `.vk`
    /// and `.meta` are still written (verifiers read them), and the next process generates
    /// again.
    pub write_generated: bool,
    /// Whether the witnesses of circuits that have a native generator (PoRep's, PoSt's and
    /// SnapDeals', from cuzk-native) are made with it rather than by synthesizing the circuit. Both give the
    /// same witness; a native witness that fails, or comes out of another shape than the
    /// circuit's, falls back to synthesis with a warning.
    pub native_witness: bool,
}

/// Free disk a generated parameter file leaves on its filesystem, at least.
pub const DISK_MARGIN: u64 = 2 << 30;

impl Default for CachePolicy {
    /// Production: never generate, always check digests, keep PCEs on disk, native witnesses.
    fn default() -> Self {
        CachePolicy {
            generate_up_to: 0,
            generator: Generator::Cpu,
            digests: DigestCheck::Verify,
            pce_on_disk: true,
            write_generated: true,
            native_witness: true,
        }
    }
}

/// What cuzk records when it generates parameters, so that a later run can check them.
#[derive(Debug, Serialize, Deserialize)]
struct GenerationRecord {
    params_digest: String,
    vk_digest: String,
    sector_size: u64,
    generator: String,
}

/// Everything proving one circuit needs, loaded once per process.
#[derive(Debug)]
pub struct CircuitKeys {
    /// The circuit.
    pub id: CircuitId,
    /// Its proving parameters.
    pub params: Arc<PreparedParameters>,
    /// Its recorded constraint matrices.
    pub pce: Arc<Pce>,
    /// Its verifying key, prepared for the self-check of every proof.
    pub pvk: PreparedVerifyingKey,
    /// How long loading (or creating) took.
    pub load_time: Duration,
    /// How long generating the parameters took, when this load generated them.
    pub generate_time: Option<Duration>,
}

type Slot = Arc<Mutex<Option<Arc<CircuitKeys>>>>;

/// A Filecoin parameter folder and the circuits loaded from it.
///
/// Parameters it generates are proved with at once; their `.params` file and generation
/// record are written by a thread holding the circuit's file lock (another process loading
/// that circuit waits for it), which [`ParamCache::wait_for_writes`] and dropping the cache
/// wait for.
#[derive(Debug)]
pub struct ParamCache {
    dir: PathBuf,
    policy: CachePolicy,
    slots: Mutex<HashMap<String, Slot>>,
    writers: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for ParamCache {
    fn drop(&mut self) {
        self.wait_for_writes();
    }
}

impl ParamCache {
    /// A cache over `dir` with the production policy (see [`CachePolicy::default`]).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_policy(dir, CachePolicy::default())
    }

    /// A cache over `dir` with the given policy.
    pub fn with_policy(dir: impl Into<PathBuf>, policy: CachePolicy) -> Self {
        ParamCache {
            dir: dir.into(),
            policy,
            slots: Mutex::new(HashMap::new()),
            writers: Mutex::new(Vec::new()),
        }
    }

    /// Waits until the parameter files this cache generated are written (a failed write
    /// was logged, and leaves no file: the next load generates again).
    pub fn wait_for_writes(&self) {
        let writers =
            std::mem::take(&mut *self.writers.lock().unwrap_or_else(PoisonError::into_inner));
        for writer in writers {
            if writer.join().is_err() {
                tracing::warn!("a parameter file writer panicked; its file was not written");
            }
        }
    }

    /// The folder filecoin-proofs itself reads parameters from in this process
    /// (`FIL_PROOFS_PARAMETER_CACHE`, else `/var/tmp/filecoin-proof-parameters/`): a cache
    /// over it is what filecoin-proofs' verifiers see.
    pub fn filecoin_dir() -> PathBuf {
        parameter_cache::parameter_cache_dir()
    }

    /// The parameter file of `id` when it is missing and this policy will not generate it
    /// (the circuit cannot be set up from this folder).
    pub fn missing_parameters(&self, id: &CircuitId) -> Option<PathBuf> {
        let path = self.dir.join(id.params_file());
        (id.sector_size > self.policy.generate_up_to && !path.exists()).then_some(path)
    }

    /// Host bytes setting circuit `id` up from this folder holds at its peak, from above.
    /// With its PCE file recorded: that file's length (the PCE's size in memory), and the
    /// parameters' file length and a copy of the largest query (they are converted one query
    /// at a time) when the file exists, else [`cuzk_plugin::Shape::parameter_bytes`] of the
    /// recorded shape. Without a readable PCE file: `estimate`'s
    /// [`cuzk_plugin::Shape::setup_bytes`].
    pub fn setup_bytes(&self, id: &CircuitId, estimate: cuzk_plugin::Shape) -> u64 {
        let Ok(pce) = Pce::peek(self.dir.join(id.pce_file()), Some(&pce_key(id))) else {
            return estimate.setup_bytes();
        };
        let shape = cuzk_plugin::Shape {
            constraints: pce.num_constraints,
            inputs: pce.num_inputs,
            aux: pce.num_aux,
        };
        let params = match fs::metadata(self.dir.join(id.params_file())) {
            Ok(meta) => meta
                .len()
                .saturating_add(shape.largest_query_bytes().min(meta.len())),
            Err(_) => shape.parameter_bytes(),
        };
        params.saturating_add(pce.file_bytes)
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The policy.
    pub fn policy(&self) -> &CachePolicy {
        &self.policy
    }

    /// The circuits currently loaded.
    pub fn loaded(&self) -> Vec<CircuitId> {
        let slots: Vec<Slot> = self.lock_slots().values().cloned().collect();
        slots
            .iter()
            .filter_map(|s| {
                let s = s.lock().unwrap_or_else(PoisonError::into_inner);
                s.as_ref().map(|k| k.id.clone())
            })
            .collect()
    }

    /// Drops a circuit's loaded parameters and PCE (in-flight proofs keep their `Arc`s);
    /// true if it was loaded.
    pub fn evict(&self, cache_id: &str) -> bool {
        let slot = self.lock_slots().remove(cache_id);
        slot.is_some_and(|s| s.lock().unwrap_or_else(PoisonError::into_inner).is_some())
    }

    /// Removes the parameter files cuzk generated for circuit `id` in this folder (never a
    /// ceremony's: only files beside cuzk's generation record), so that the next load
    /// generates them again; true if there were any. The loaded copy, if any, stays until
    /// [`ParamCache::evict`].
    pub fn remove_generated(&self, id: &CircuitId) -> io::Result<bool> {
        self.wait_for_writes();
        if !self.dir.join(id.generation_record_file()).exists() {
            return Ok(false);
        }
        for name in [
            id.params_file(),
            id.vk_file(),
            id.meta_file(),
            id.generation_record_file(),
        ] {
            match fs::remove_file(self.dir.join(name)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(true)
    }

    fn lock_slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The circuit's parameters and PCE, loaded once: the PCE from its file or recorded from
    /// `blank` (the circuit filecoin-proofs generates parameters from, run on its sequential
    /// path), the parameters from the folder after the digest check, or generated where the
    /// policy allows.
    pub fn circuit<C: Circuit<Scalar>>(
        &self,
        id: &CircuitId,
        blank: impl FnOnce() -> C,
    ) -> Result<Arc<CircuitKeys>> {
        self.circuit_recorded(id, || Pce::record(Sequential(blank())))
    }

    /// [`ParamCache::circuit`] with the circuit's own way of recording its PCE, when there is
    /// no file of it (PoRep records its challenges in parallel runs).
    pub(crate) fn circuit_recorded(
        &self,
        id: &CircuitId,
        record: impl FnOnce() -> std::result::Result<Pce, cuzk_synth::SynthError>,
    ) -> Result<Arc<CircuitKeys>> {
        let slot = self
            .lock_slots()
            .entry(id.cache_id.clone())
            .or_default()
            .clone();
        // Loads of one circuit wait for each other; other circuits load in parallel.
        let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(keys) = slot.as_ref() {
            return Ok(keys.clone());
        }
        let keys = Arc::new(self.load(id, record)?);
        *slot = Some(keys.clone());
        Ok(keys)
    }

    fn load(
        &self,
        id: &CircuitId,
        record: impl FnOnce() -> std::result::Result<Pce, cuzk_synth::SynthError>,
    ) -> Result<CircuitKeys> {
        let span = tracing::info_span!("load_circuit", circuit = %id);
        let _enter = span.enter();
        let start = Instant::now();
        fs::create_dir_all(&self.dir).map_err(Error::io(&self.dir))?;
        // Another process may be creating this circuit's files; wait for it. A read-only
        // folder cannot be locked, nor written, so nothing is created there anyway. Held
        // until this load ends, or by the thread writing what it generates.
        let lock = self.lock_circuit(id);

        let params_path = self.dir.join(id.params_file());
        let record_path = self.dir.join(id.generation_record_file());
        let may_generate = id.sector_size <= self.policy.generate_up_to;
        let missing = !params_path.exists();
        // Refuse before recording: recording a large circuit takes minutes.
        if missing && !may_generate {
            return Err(Error::MissingParameters {
                path: params_path,
                sector_size: id.sector_size,
            });
        }
        let pce = Arc::new(self.pce(id, record)?);
        // Parameters generated here are used as made (their files are written from them);
        // others are read from the folder. Either are checked against the circuit.
        let generated = |lock| -> Result<(Arc<PreparedParameters>, Option<Duration>)> {
            let (params, time) = self.generate(id, &pce, lock)?;
            check_shape(&params_path, params.vk().ic.len(), params.l().len(), &pce)?;
            Ok((params, Some(time)))
        };
        let (params, generate_time) = if missing {
            generated(lock)?
        } else {
            let read_start = Instant::now();
            let params = self.read(&params_path, &record_path, may_generate)?;
            tracing::info!(
                read_ms = read_start.elapsed().as_millis() as u64,
                path = %params_path.display(),
                "parameters read"
            );
            match check_shape(&params_path, params.vk.ic.len(), params.l.len(), &pce) {
                Ok(()) => (Arc::new(PreparedParameters::from(params)), None),
                // Parameters cuzk generated for a test size are disposable: a circuit that
                // changed shape since (a new filecoin-proofs, say) gets new ones.
                Err(e) if may_generate && record_path.exists() => {
                    tracing::warn!(error = %e, "generated parameters no longer fit the circuit; generating again");
                    drop(params);
                    generated(lock)?
                }
                Err(e) => return Err(e),
            }
        };
        let pvk = cuzk_groth16::prepare_verifying_key(params.vk());
        tracing::info!(
            total_ms = start.elapsed().as_millis() as u64,
            generated = generate_time.is_some(),
            path = %params_path.display(),
            "parameters loaded"
        );
        Ok(CircuitKeys {
            id: id.clone(),
            params,
            pce,
            pvk,
            load_time: start.elapsed(),
            generate_time,
        })
    }

    fn read(&self, params: &Path, record: &Path, may_generate: bool) -> Result<Parameters> {
        let expected = match self.policy.digests {
            DigestCheck::Skip => None,
            DigestCheck::Verify => Some(expected_digest(params, record, may_generate)?),
        };
        read_params(params, expected)
    }

    fn lock_circuit(&self, id: &CircuitId) -> Option<File> {
        let path = self.dir.join(id.lock_file());
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .ok()?;
        match file.lock() {
            Ok(()) => Some(file),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot lock; continuing unlocked");
                None
            }
        }
    }

    /// Loads the PCE file or records the circuit with `record` (and saves it when allowed).
    pub(crate) fn pce(
        &self,
        id: &CircuitId,
        record: impl FnOnce() -> std::result::Result<Pce, cuzk_synth::SynthError>,
    ) -> Result<Pce> {
        let path = self.dir.join(id.pce_file());
        if self.policy.pce_on_disk && path.exists() {
            let start = Instant::now();
            match Pce::load(&path, Some(&pce_key(id))) {
                Ok(pce) => {
                    tracing::info!(
                        ms = start.elapsed().as_millis() as u64,
                        path = %path.display(),
                        "PCE loaded"
                    );
                    return Ok(pce);
                }
                // The file is only a cache of the circuit: record it again.
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "PCE file unusable; recording again")
                }
            }
        }
        let start = Instant::now();
        tracing::info!(circuit = %id, "recording PCE");
        let pce = {
            let _ticker = Ticker::start(format!("recording the PCE of {id}"), PROGRESS_EVERY);
            record().map_err(|source| Error::Record {
                circuit: id.cache_id.clone(),
                source,
            })?
        };
        tracing::info!(
            ms = start.elapsed().as_millis() as u64,
            constraints = pce.num_constraints,
            inputs = pce.num_inputs,
            aux = pce.num_aux,
            "PCE recorded"
        );
        if self.policy.pce_on_disk {
            let start = Instant::now();
            match pce.save(&path, &pce_key(id)) {
                Ok(()) => tracing::info!(
                    ms = start.elapsed().as_millis() as u64,
                    path = %path.display(),
                    "PCE saved"
                ),
                // Proving does not need the file; the next process records again.
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "PCE not saved"),
            }
        }
        Ok(pce)
    }

    /// Generates parameters with cuzk's generator (where the policy says) and writes `.vk`
    /// and `.meta` (small: verifiers read the first), then has a thread holding `lock` write
    /// `.params` and the generation record (which names both digests), each under a
    /// temporary name renamed into place. Returns them and how long generating took.
    fn generate(
        &self,
        id: &CircuitId,
        pce: &Pce,
        lock: Option<File>,
    ) -> Result<(Arc<PreparedParameters>, Duration)> {
        let start = Instant::now();
        let generator = &self.policy.generator;
        tracing::info!(
            circuit = %id,
            constraints = pce.num_constraints,
            %generator,
            "generating parameters (test setup, not a ceremony's)"
        );
        let (params, made_by) = {
            let _ticker = Ticker::start(format!("generating parameters for {id}"), PROGRESS_EVERY);
            generate_with(generator, &id.cache_id, pce).map_err(|source| Error::Generate {
                circuit: id.cache_id.clone(),
                source,
            })?
        };
        let generate_time = start.elapsed();
        let gen_ms = generate_time.as_millis() as u64;
        let params = Arc::new(PreparedParameters::from(params));
        let write_start = Instant::now();
        let vk_digest = write_atomic(&self.dir.join(id.vk_file()), |w| params.vk().write(w))?;
        let meta = parameter_cache::CacheEntryMetadata {
            sector_size: id.sector_size,
        };
        write_atomic(&self.dir.join(id.meta_file()), |w| {
            serde_json::to_writer(w, &meta).map_err(io::Error::other)
        })?;
        tracing::info!(
            circuit = %id,
            generator = %made_by,
            generate_ms = gen_ms,
            write_ms = write_start.elapsed().as_millis() as u64,
            "parameters generated"
        );
        let file_len = params.file_len();
        let skip = if !self.policy.write_generated {
            tracing::info!(circuit = %id, bytes = file_len, "generated parameters kept in memory only (the policy writes no .params file)");
            true
        } else if let Err(free) = {
            // A killed process's partial file of this circuit would count against the new one.
            // Only under the circuit's file lock: without it another live writer (in another
            // pid namespace, say) could look stopped.
            if lock.is_some() {
                files::remove_stale_partials(&self.dir.join(id.params_file()));
            }
            files::room_for(&self.dir, file_len + DISK_MARGIN)
        } {
            tracing::warn!(
                circuit = %id,
                dir = %self.dir.display(),
                needed = file_len + DISK_MARGIN,
                free,
                "not enough free disk for the generated parameter file: kept in memory only, the next process generates again"
            );
            true
        } else {
            false
        };
        if skip {
            // An earlier generation's file no longer matches the .vk just written. Proving
            // does not need it gone; a later load would find it does not fit, and regenerate.
            if let Err(e) = self.remove_stale_generated(id) {
                tracing::warn!(circuit = %id, error = %e, "a stale generated parameter file could not be removed");
            }
            return Ok((params, generate_time));
        }
        let writer = Writer {
            dir: self.dir.clone(),
            id: id.clone(),
            params: Arc::clone(&params),
            vk_digest,
            generator: format!("cuzk {} ({made_by})", env!("CARGO_PKG_VERSION")),
            lock,
        };
        let span = tracing::Span::current();
        let handle = std::thread::Builder::new()
            .name("cuzk-param-write".into())
            .spawn(move || span.in_scope(|| writer.run()))
            .map_err(Error::io(&self.dir))?;
        self.writers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(handle);
        Ok((params, generate_time))
    }
}

impl ParamCache {
    /// Removes the `.params` file and generation record an earlier generation of `id` left
    /// (only where cuzk's record is there: never a ceremony's file).
    fn remove_stale_generated(&self, id: &CircuitId) -> Result<()> {
        let record = self.dir.join(id.generation_record_file());
        if record.exists() {
            for path in [self.dir.join(id.params_file()), record] {
                match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::Io { path, source: e }),
                }
            }
        }
        Ok(())
    }
}

/// Fresh random parameters for the PCE's circuit from the given generator.
/// Fresh random parameters and the name of the generator that made them.
fn generate_with(
    generator: &Generator,
    circuit_key: &str,
    pce: &Pce,
) -> Result<(Parameters, String), BackendError> {
    let cpu = || -> Result<(Parameters, String), BackendError> {
        let params = cuzk_groth16::generate_parameters(pce, &mut rand::rngs::OsRng)?;
        Ok((params, "cpu".into()))
    };
    match generator {
        Generator::Cpu => cpu(),
        Generator::Backend(g) => match g.generate(circuit_key, pce) {
            Ok(params) => Ok((params, g.name().to_string())),
            Err(e) => {
                tracing::warn!(
                    generator = g.name(),
                    circuit = circuit_key,
                    error = %e,
                    "parameter generation failed; generating on the CPU"
                );
                cpu()
            }
        },
    }
}

/// How this crate records circuits; part of every PCE file's key, so that a file recorded
/// another way (an older wrapper, say) is recorded again instead of trusted.
const RECORDING: &str = "cuzk-filecoin/sequential-v1";

/// The key a circuit's PCE file is saved under and checked against.
fn pce_key(id: &CircuitId) -> String {
    format!("{}@{RECORDING}", id.cache_id)
}

/// The digest `path` must have: from cuzk's generation record when generation is allowed for
/// its size and a record exists, else from filecoin-proofs' parameters.json.
fn expected_digest(path: &Path, record: &Path, trust_generated: bool) -> Result<Expected> {
    if trust_generated && record.exists() {
        let bytes = fs::read(record).map_err(Error::io(record))?;
        let rec: GenerationRecord = serde_json::from_slice(&bytes).map_err(|e| Error::Io {
            path: record.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        })?;
        return Ok(Expected {
            digest: rec.params_digest,
            source: "cuzk generation record",
        });
    }
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match parameter_cache::get_parameter_data_from_id(name) {
        Some(data) => Ok(Expected {
            digest: data.digest.clone(),
            source: "parameters.json",
        }),
        None => Err(Error::UnknownParameterFile {
            path: path.to_path_buf(),
        }),
    }
}

struct Expected {
    digest: String,
    source: &'static str,
}

/// Reads and decodes the parameters, hashing every byte of the file on the way when a digest
/// is expected, so that the file is read once. A digest mismatch wins over a decoding error:
/// it says why the data was bad.
fn read_params(path: &Path, expected: Option<Expected>) -> Result<Parameters> {
    let file = File::open(path).map_err(Error::io(path))?;
    let mut reader = DigestReader::new(BufReader::with_capacity(IO_BUFFER, file));
    let decoded = Parameters::read(&mut reader, false);
    let Some(expected) = expected else {
        return decoded.map_err(|source| Error::Parameters {
            path: path.to_path_buf(),
            source,
        });
    };
    // The digest covers the whole file, including anything after the last section.
    io::copy(&mut reader, &mut io::sink()).map_err(Error::io(path))?;
    let found = reader.hex_digest();
    if found != expected.digest {
        return Err(Error::DigestMismatch {
            path: path.to_path_buf(),
            expected: expected.digest,
            found,
            source_of_expected: expected.source,
        });
    }
    decoded.map_err(|source| Error::Parameters {
        path: path.to_path_buf(),
        source,
    })
}

fn check_shape(path: &Path, ic: usize, l: usize, pce: &Pce) -> Result<()> {
    let checks = [
        ("public inputs (ONE included)", pce.num_inputs, ic),
        ("aux variables (L query)", pce.num_aux, l),
    ];
    for (what, expected, found) in checks {
        if expected != found {
            return Err(Error::ParametersShape {
                path: path.to_path_buf(),
                what,
                expected,
                found,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::{ConstraintSystem, SynthesisError};
    use cuzk_plugin::Shape;

    /// x · x = y, `n` times over.
    struct Squares(usize);

    impl Circuit<Scalar> for Squares {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            for i in 0..self.0 {
                let x = cs.alloc(|| format!("x{i}"), || Ok(Scalar::from(i as u64)))?;
                let y = cs.alloc(|| format!("y{i}"), || Ok(Scalar::from((i * i) as u64)))?;
                cs.enforce(|| format!("sq{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
            }
            Ok(())
        }
    }

    /// The preload's reservation: the shape's estimate until a PCE file exists, then that
    /// file and the recorded shape's parameters, then the parameter file and a copy of its
    /// largest query.
    #[test]
    fn setup_bytes_come_from_the_files_once_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ParamCache::new(dir.path());
        let id = CircuitId {
            kind: ProofKind::PoRep,
            cache_id: "test-squares".to_string(),
            sector_size: 2048,
        };
        let estimate = Shape {
            constraints: 1 << 20,
            inputs: 1,
            aux: 1 << 20,
        };
        assert_eq!(cache.setup_bytes(&id, estimate), estimate.setup_bytes());

        let pce = Pce::record(Squares(100)).unwrap();
        let path = dir.path().join(id.pce_file());
        pce.save(&path, &pce_key(&id)).unwrap();
        let recorded = Shape {
            constraints: pce.num_constraints,
            inputs: pce.num_inputs,
            aux: pce.num_aux,
        };
        let pce_bytes = fs::metadata(&path).unwrap().len();
        assert_eq!(
            cache.setup_bytes(&id, estimate),
            recorded.parameter_bytes() + pce_bytes
        );
        // A PCE of another circuit under that name is not trusted.
        pce.save(&path, "another-circuit").unwrap();
        assert_eq!(cache.setup_bytes(&id, estimate), estimate.setup_bytes());
        pce.save(&path, &pce_key(&id)).unwrap();

        let params_len = 50_000u64;
        fs::write(
            dir.path().join(id.params_file()),
            vec![0u8; params_len as usize],
        )
        .unwrap();
        assert_eq!(
            cache.setup_bytes(&id, estimate),
            params_len + recorded.largest_query_bytes().min(params_len) + pce_bytes
        );
    }
}
