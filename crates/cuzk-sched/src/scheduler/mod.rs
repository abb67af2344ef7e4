//! The scheduler's API: start, submit, await, status, cancel, metrics, shutdown.

mod core;
mod dispatch;
mod handle;
mod job;
mod tasks;
mod workers;

pub use self::handle::JobHandle;

use self::core::{ratio, Core};
use self::job::{Job, PartTimes};
use self::tasks::Event;
use crate::config::Resolved;
use crate::{
    AnyBackend, ControlError, Instance, JobError, JobId, JobOutput, JobStatus, LaneLayout,
    MemoryStats, MetricsSnapshot, ProveError, Registry, Request, SchedulerConfig, StartError,
    SubmitError, SynthesisStats,
};
use cuzk_mem::{Budget, ReleaseListener};
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// What the API, the dispatcher and the workers share.
pub(crate) struct Shared {
    core: Mutex<Core>,
    /// Signalled when no job is left, for a graceful shutdown.
    drained: Condvar,
    events: Sender<Event>,
    registry: Arc<Registry>,
    backend: Arc<dyn AnyBackend>,
    budget: Budget,
    config: Resolved,
    started: Instant,
}

/// Every update of the core is a few assignments that cannot panic half-way, and worker
/// panics are caught outside it, so a poisoned lock still guards consistent state.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The proving scheduler. Share it behind an `Arc`; every method takes `&self`.
///
/// Dropping it is [`Scheduler::shutdown`] with no grace: unfinished jobs fail with
/// [`JobError::ShutDown`], and the drop waits for proofs already running to end.
pub struct Scheduler {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Wakes the dispatcher whenever memory of the budget is released, also by others
    /// sharing it.
    _listener: ReleaseListener,
}

/// What [`Scheduler::preload`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreloadReport {
    /// The circuit.
    pub circuit_key: String,
    /// Whether its setup was cached before the call.
    pub was_cached: bool,
    /// Time spent obtaining the setup (recording, generating or waiting for it).
    pub setup_time: Duration,
    /// Time spent placing the parameters on the devices.
    pub load_time: Duration,
    /// What the backend did.
    pub load: crate::LoadReport,
}

/// What [`Scheduler::shutdown`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Jobs that finished during the grace period.
    pub finished_in_grace: usize,
    /// Jobs still unfinished after it, failed with [`JobError::ShutDown`].
    pub stopped: usize,
}

/// A request its kind has read, ready for [`Scheduler::enqueue`].
pub struct Parsed {
    request: Request,
    instance: Arc<dyn Instance>,
}

impl fmt::Debug for Parsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Parsed")
            .field("kind", &self.request.kind)
            .field("circuit_key", &self.instance.circuit_key())
            .field("partitions", &self.instance.partitions())
            .finish()
    }
}

impl Scheduler {
    /// Starts the dispatcher, the synthesis workers and one thread per lane of `backend`,
    /// admitting partitions against `budget` (normally the host budget from
    /// [`cuzk_mem::HostBudget`]).
    pub fn start(
        config: SchedulerConfig,
        backend: Arc<dyn AnyBackend>,
        mut registry: Registry,
        budget: Budget,
    ) -> Result<Scheduler, StartError> {
        let layout = backend.lanes();
        // A generator the caller set wins over the backend's.
        if !registry.has_generator() {
            if let Some(generator) = backend.parameter_generator() {
                registry.set_generator(generator);
            }
        }
        if layout.is_empty() {
            return Err(StartError::NoLanes {
                backend: backend.name().to_string(),
                layout,
            });
        }
        let config = config.resolve(layout.len())?;
        let lanes: Vec<_> = layout.lanes().collect();
        let (events, inbox) = mpsc::channel();
        registry.count_setups_in(budget.clone());
        let registry = Arc::new(registry);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core::new(
                &lanes,
                config.synthesis_workers,
                config.finished_history,
                config.verify_proofs,
            )),
            drained: Condvar::new(),
            events: events.clone(),
            registry: Arc::clone(&registry),
            backend: Arc::clone(&backend),
            budget: budget.clone(),
            config: config.clone(),
            started: Instant::now(),
        });
        let wake = events.clone();
        let listener = budget.on_release(move || {
            let _ = wake.send(Event::Wake);
        });

        // If a spawn fails, the threads already started see their inboxes dropped with
        // these vectors and exit.
        let mut threads = Vec::new();
        let mut synth_tx = Vec::new();
        let workers = config.synthesis_workers;
        for i in 0..workers {
            let (tx, rx) = mpsc::channel();
            let (registry, backend, events) =
                (Arc::clone(&registry), Arc::clone(&backend), events.clone());
            threads.push(spawn(format!("cuzk-synth-{i}"), move || {
                workers::synthesis_loop(i, workers, rx, registry, backend, events)
            })?);
            synth_tx.push(tx);
        }
        let mut lane_tx = Vec::new();
        for (i, &lane) in lanes.iter().enumerate() {
            let (tx, rx) = mpsc::channel();
            let (backend, events) = (Arc::clone(&backend), events.clone());
            let verify = config.verify_proofs;
            threads.push(spawn(format!("cuzk-lane-{lane}"), move || {
                workers::lane_loop(i, lane, rx, backend, verify, events)
            })?);
            lane_tx.push(tx);
        }
        let dispatcher = Arc::clone(&shared);
        threads.push(spawn("cuzk-dispatch".into(), move || {
            dispatch::run(dispatcher, inbox, synth_tx, lane_tx)
        })?);
        tracing::info!(
            backend = backend.name(),
            lanes = %layout,
            synthesis_workers = config.synthesis_workers,
            lookahead = config.lookahead,
            budget = %cuzk_mem::Bytes(budget.capacity()),
            verify = config.verify_proofs,
            "scheduler started"
        );
        Ok(Scheduler {
            shared,
            threads: Mutex::new(threads),
            _listener: listener,
        })
    }

    /// Accepts a request, or refuses it at once with the reason. Cheap: it reads the
    /// inputs and estimates memory; all proving work happens on the scheduler's threads.
    /// The same as [`Scheduler::parse`] then [`Scheduler::enqueue`].
    pub fn submit(&self, request: Request) -> Result<JobHandle, SubmitError> {
        let parsed = self.parse(request)?;
        self.enqueue(parsed)
    }

    /// Reads a request's inputs as its kind does (the part of a submission that can take a
    /// while: a large C1 decoded and checked), touching no queue: a caller can parse
    /// outside its own locks and decide afterwards whether to enqueue. A refusal counts as
    /// an invalid submission.
    pub fn parse(&self, request: Request) -> Result<Parsed, SubmitError> {
        match self.shared.registry.parse(&request.kind, &request.inputs) {
            Ok(instance) => Ok(Parsed { request, instance }),
            Err(e) => {
                lock(&self.shared.core).counts.invalid += 1;
                Err(e)
            }
        }
    }

    /// Queues a parsed request, or refuses it at once (too large for the budget, queue
    /// full, shutting down). Cheap: it estimates memory and takes the queue's lock once.
    pub fn enqueue(&self, parsed: Parsed) -> Result<JobHandle, SubmitError> {
        let shared = &self.shared;
        let Parsed { request, instance } = parsed;
        let circuit_key = instance.circuit_key();
        // The exact shape once the circuit is set up; the kind's estimate before.
        let shape = match shared.registry.cached(&circuit_key) {
            Some(setup) => setup.shape(),
            None => instance.shape(),
        };
        let partition_bytes = shared
            .backend
            .partition_bytes(&shape)
            .saturating_add(instance.synthesis_scratch_bytes());
        let witness_bytes = (shape.inputs as u64)
            .saturating_add(shape.aux as u64)
            .saturating_mul(std::mem::size_of::<cuzk_field::Scalar>() as u64)
            .min(partition_bytes);
        let mut core = lock(&shared.core);
        if !core.accepting {
            return Err(SubmitError::ShuttingDown);
        }
        // Other circuits' cached setups hold their part of the budget until evicted.
        let capacity = shared
            .budget
            .capacity()
            .saturating_sub(shared.registry.setup_bytes_held_except(&circuit_key));
        if partition_bytes > capacity {
            core.counts.refused += 1;
            return Err(SubmitError::TooLarge {
                circuit_key,
                needed: partition_bytes,
                capacity,
            });
        }
        if core.jobs.len() >= shared.config.max_queued_jobs {
            core.counts.refused += 1;
            return Err(SubmitError::QueueFull {
                limit: shared.config.max_queued_jobs,
            });
        }
        let (reply, receiver) = oneshot::channel();
        let partitions = instance.partitions();
        let id = core.add(|id, seq| Job {
            id,
            seq,
            priority: request.priority,
            span: tracing::info_span!(
                "job",
                id = id.0,
                kind = %request.kind,
                priority = %request.priority,
                partitions
            ),
            kind: request.kind,
            circuit_key,
            instance,
            partitions,
            device: None,
            started: 0,
            proved: 0,
            proofs: vec![None; partitions],
            finished: None,
            public_inputs: vec![Vec::new(); partitions],
            times: vec![PartTimes::default(); partitions],
            setup: Duration::ZERO,
            setup_used: None,
            partition_bytes,
            witness_bytes,
            submitted: Instant::now(),
            deadline: request.deadline,
            first_start: None,
            reply: Some(reply),
            cancelled: Arc::new(AtomicBool::new(false)),
        });
        drop(core);
        let _ = shared.events.send(Event::Wake);
        Ok(JobHandle::new(id, receiver))
    }

    /// Submits and waits: the blocking convenience. Do not call it from async code (it
    /// parks the thread); await [`Scheduler::submit`]'s handle there.
    pub fn prove_blocking(&self, request: Request) -> Result<JobOutput, ProveError> {
        Ok(self.submit(request)?.wait_blocking()?)
    }

    /// Where job `id` is, also for a recently finished job.
    pub fn status(&self, id: JobId) -> Result<JobStatus, ControlError> {
        lock(&self.shared.core)
            .status(id)
            .ok_or(ControlError::UnknownJob { job: id })
    }

    /// Cancels job `id`: its handle resolves to [`JobError::Cancelled`] at once, its queued
    /// partitions and their memory are dropped, and work in flight is discarded when it
    /// ends (a running proof is not interrupted).
    pub fn cancel(&self, id: JobId) -> Result<(), ControlError> {
        let mut core = lock(&self.shared.core);
        if !core.jobs.contains_key(&id) {
            return Err(match core.status(id) {
                Some(status) => ControlError::AlreadyFinished {
                    job: id,
                    state: status.state,
                },
                None => ControlError::UnknownJob { job: id },
            });
        }
        core.finish(id, Some(JobError::Cancelled { job: id }));
        if core.jobs.is_empty() {
            self.shared.drained.notify_all();
        }
        drop(core);
        let _ = self.shared.events.send(Event::Wake);
        Ok(())
    }

    /// Counts, memory and utilization now.
    pub fn metrics(&self) -> MetricsSnapshot {
        let shared = &self.shared;
        let now = Instant::now();
        let uptime = now - shared.started;
        let core = lock(&shared.core);
        let synth_capacity = uptime.mul_f64(core.synth_workers as f64);
        MetricsSnapshot {
            backend: shared.backend.name().to_string(),
            uptime,
            jobs: core.job_counts(),
            partitions: core.partition_counts(),
            memory: MemoryStats {
                budget: shared.budget.name().to_string(),
                capacity: shared.budget.capacity(),
                used: shared.budget.used(),
                high_water: shared.budget.high_water(),
            },
            lanes: core.lane_stats(now, uptime),
            synthesis: SynthesisStats {
                workers: core.synth_workers,
                busy: core.synth_busy_workers(),
                busy_time: core.synth_busy,
                partitions: core.synth_partitions,
                utilization: ratio(core.synth_busy, synth_capacity),
            },
            setups_cached: shared.registry.cached_keys().len(),
            setup_bytes: shared.registry.setup_bytes_held(),
            devices: shared.backend.device_stats(),
        }
    }

    /// Sets circuit `kind` with `inputs` up (PCE and parameters, made now if not cached; `kind`
    /// may also be a public preload id such as `porep-32g`, with no inputs) and
    /// has the backend place its parameters on every device, so that its first job pays for
    /// neither; `pin` keeps them there (no idle eviction). Blocking: parameter generation
    /// can take minutes for large circuits.
    pub fn preload(
        &self,
        kind: &str,
        inputs: &crate::Inputs,
        pin: bool,
    ) -> Result<PreloadReport, crate::PreloadError> {
        let registry = &self.shared.registry;
        let instance = match registry.parse(kind, inputs) {
            Ok(instance) => instance,
            // A kind's public id without inputs (`porep-32g`) names a circuit too.
            Err(e @ SubmitError::UnknownKind { .. }) => match registry.public_instance(kind) {
                Some(instance) if *inputs == crate::Inputs::default() => instance,
                _ => return Err(e.into()),
            },
            Err(e) => return Err(e.into()),
        };
        let report = self.preload_instance(&*instance, pin)?;
        // Set up by kind and inputs, as the operator's configuration does: the circuit may
        // be preloaded again by its key ([`Scheduler::preload_named`]), also after an evict.
        self.shared.registry.trust_for_preload(instance);
        Ok(report)
    }

    /// [`Scheduler::preload`] by an id any caller may send (the daemon's `PreloadSRS`): a
    /// kind's public id ([`crate::CircuitKind::preload_ids`], e.g. Curio's `porep-32g`), the
    /// key of a circuit [`Scheduler::preload`] set up (trusted: the operator's
    /// configuration), or the key of a circuit already set up. Anything else is
    /// [`crate::PreloadError::NotPreloadable`], naming what is accepted, so that a caller
    /// cannot have the daemon set up whatever circuit it names (a key of a huge size).
    ///
    /// A setup still to be made reserves its estimate ([`crate::Shape::setup_bytes`]) from
    /// the memory budget while it is made, and is refused with
    /// [`crate::PreloadError::Memory`] when the budget cannot grant it now; once cached, the
    /// setup holds its own bytes ([`cuzk_plugin::Setup::host_bytes`]) of the budget until it is
    /// evicted.
    pub fn preload_named(&self, id: &str, pin: bool) -> Result<PreloadReport, crate::PreloadError> {
        let registry = &self.shared.registry;
        if let Some(instance) = registry
            .public_instance(id)
            .or_else(|| registry.trusted(id))
        {
            return self.preload_instance(&*instance, pin);
        }
        if let Some(setup) = registry.cached(id) {
            return self.load_setup(&setup, true, Duration::ZERO, Instant::now(), pin);
        }
        Err(crate::PreloadError::NotPreloadable {
            id: id.to_string(),
            public: registry.preload_ids(),
            trusted: registry.trusted_keys(),
            cached: registry.cached_keys(),
        })
    }

    /// [`Scheduler::preload`] by circuit key alone (`PreloadSRS`), for kinds that make an
    /// instance from a key ([`crate::CircuitKind::instance_for_key`]).
    pub fn preload_key(
        &self,
        circuit_key: &str,
        pin: bool,
    ) -> Result<PreloadReport, crate::PreloadError> {
        let instance = self
            .shared
            .registry
            .instance_for_key(circuit_key)
            .ok_or_else(|| crate::PreloadError::UnknownKey {
                circuit_key: circuit_key.to_string(),
            })?;
        self.preload_instance(&*instance, pin)
    }

    fn preload_instance(
        &self,
        instance: &dyn crate::Instance,
        pin: bool,
    ) -> Result<PreloadReport, crate::PreloadError> {
        let circuit_key = instance.circuit_key();
        let was_cached = self.shared.registry.cached(&circuit_key).is_some();
        let start = Instant::now();
        // Held while the setup is made (recording, generating or reading parameters), the
        // host's peak; then shrunk to what the cached setup holds, until it is evicted.
        let building = if was_cached {
            None
        } else {
            let needed = instance.setup_bytes();
            Some(self.shared.budget.try_reserve(needed).map_err(|source| {
                crate::PreloadError::Memory {
                    circuit_key: circuit_key.clone(),
                    needed,
                    source,
                }
            })?)
        };
        // The building reservation becomes the cached setup's share of the budget, which
        // leaves room for one of the circuit's partitions.
        let keep_free = self
            .shared
            .backend
            .partition_bytes(&instance.shape())
            .saturating_add(instance.synthesis_scratch_bytes());
        let (setup, setup_time) = self
            .shared
            .registry
            .setup_held(instance, building, keep_free)?;
        self.load_setup(&setup, was_cached, setup_time, start, pin)
    }

    /// Places `setup`'s parameters on every device and reports the preload that began at
    /// `start`.
    fn load_setup(
        &self,
        setup: &crate::Setup,
        was_cached: bool,
        setup_time: Duration,
        start: Instant,
        pin: bool,
    ) -> Result<PreloadReport, crate::PreloadError> {
        let circuit_key = setup.circuit_key.clone();
        let loaded =
            self.shared
                .backend
                .load(setup, pin)
                .map_err(|source| crate::PreloadError::Load {
                    circuit_key: circuit_key.clone(),
                    source,
                })?;
        let report = PreloadReport {
            circuit_key,
            was_cached,
            setup_time,
            load_time: start.elapsed().saturating_sub(setup_time),
            load: loaded,
        };
        tracing::info!(
            circuit = %report.circuit_key,
            was_cached,
            setup_ms = setup_time.as_millis() as u64,
            load_ms = report.load_time.as_millis() as u64,
            devices = report.load.devices,
            resident = report.load.resident,
            pin,
            "parameters preloaded"
        );
        Ok(report)
    }

    /// Frees circuit `circuit_key`'s parameters: the backend's device copies and the cached
    /// setup (PCE and host parameters). `circuit_key` is a setup's key, or a name a kind
    /// resolves to one ([`crate::CircuitKind::instance_for_key`], as `PreloadSRS` ids). Jobs already running keep what they use until they
    /// end; the next job of the circuit sets it up again. Returns what was freed.
    pub fn evict(&self, circuit_key: &str) -> crate::EvictReport {
        // A name that is no setup's key but names a circuit (`PreloadSRS`'s ids) evicts that
        // circuit's setup.
        let resolved;
        let circuit_key = if self.shared.registry.cached(circuit_key).is_some() {
            circuit_key
        } else {
            match self.shared.registry.instance_for_key(circuit_key) {
                Some(instance) => {
                    resolved = instance.circuit_key();
                    resolved.as_str()
                }
                None => circuit_key,
            }
        };
        let device = self.shared.backend.evict(circuit_key);
        let host = self.shared.registry.evict(circuit_key);
        let host_bytes = host.as_ref().map_or(0, |s| s.host_bytes());
        let report = crate::EvictReport {
            was_loaded: device.was_loaded || host.is_some(),
            freed_bytes: device.freed_bytes + host_bytes,
        };
        tracing::info!(
            circuit = %circuit_key,
            was_loaded = report.was_loaded,
            device_bytes = device.freed_bytes,
            host_bytes,
            "parameters evicted"
        );
        report
    }

    /// The registry: its kinds and the setup cache (to supply parameters, or to set a
    /// circuit up ahead of its first job).
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// The memory budget partitions are admitted against.
    pub fn budget(&self) -> &Budget {
        &self.shared.budget
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &str {
        self.shared.backend.name()
    }

    /// The backend's lanes.
    pub fn lanes(&self) -> LaneLayout {
        self.shared.backend.lanes()
    }

    /// Stops accepting jobs, lets those accepted finish for up to `grace`, fails the rest
    /// with [`JobError::ShutDown`], and joins the threads. A proof already running is not
    /// interrupted: the call returns once it ends. Later calls do nothing.
    pub fn shutdown(&self, grace: Duration) -> ShutdownReport {
        let mut threads = lock(&self.threads);
        if threads.is_empty() {
            return ShutdownReport::default();
        }
        let mut core = lock(&self.shared.core);
        core.accepting = false;
        let before = core.jobs.len();
        let until = Instant::now().checked_add(grace);
        while !core.jobs.is_empty() {
            let left = until.map_or(Duration::MAX, |t| {
                t.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                break;
            }
            core = self
                .shared
                .drained
                .wait_timeout(core, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let left: Vec<JobId> = core.jobs.keys().copied().collect();
        for &job in &left {
            core.finish(job, Some(JobError::ShutDown { job }));
        }
        core.stopping = true;
        drop(core);
        let _ = self.shared.events.send(Event::Wake);
        for thread in threads.drain(..) {
            // A worker thread never panics (its work runs under catch_unwind); if one did,
            // there is nothing left to clean up here.
            let _ = thread.join();
        }
        tracing::info!(
            finished = before - left.len(),
            stopped = left.len(),
            "scheduler stopped"
        );
        ShutdownReport {
            finished_in_grace: before - left.len(),
            stopped: left.len(),
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shutdown(Duration::ZERO);
    }
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
            .field("backend", &self.shared.backend.name())
            .field("lanes", &self.shared.backend.lanes())
            .field("budget", &self.shared.budget)
            .finish_non_exhaustive()
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, StartError> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|source| StartError::Spawn {
            thread: name,
            source,
        })
}
