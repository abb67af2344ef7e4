//! [`GpuBackend`]: the scheduler's `Backend` on CUDA devices.

use crate::device::{lock, DeviceState, Loaded};
use crate::paramgen::GpuParamgen;
use crate::sizes;
use crate::sweeper::Sweeper;
use crate::{FaultPlan, GpuConfig, GpuError, ParamgenChoice};
use cuzk_field::Scalar;
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_mem::VramBudget;
use cuzk_plugin::{
    Backend, BackendError, DeviceStats, EvictReport, Lane, LaneLayout, LoadReport,
    ParameterGenerator, PrepareInput, ProveInput, ProvePreparedInput, Setup, Shape,
};
use cuzk_prover::PreparedWitness;
use cuzk_synth::{Density, Pce};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The backend's name in logs, metrics and errors.
pub(crate) const NAME: &str = "cuda";

/// What [`GpuBackend`] prepares (its `Backend::Prepared`): the pinned witness, and the
/// parameters it was checked against (held, so they stay on the device until the proof is
/// done).
#[allow(missing_debug_implementations)] // Pinned buffers and device handles: nothing to show.
pub struct GpuPrepared {
    loaded: Arc<Loaded>,
    witness: PreparedWitness,
}

/// What the backend, its parameter generator and its sweeper share.
pub(crate) struct Inner {
    pub devices: Vec<DeviceState>,
    layout: LaneLayout,
    densities: Mutex<HashMap<String, Arc<Density>>>,
    faults: FaultPlan,
    proofs: AtomicU64,
}

impl Inner {
    fn device(&self, lane: Lane) -> Result<&DeviceState, BackendError> {
        match self.devices.get(lane.device) {
            Some(d) if lane.worker < d.lanes.len() => Ok(d),
            _ => Err(BackendError::NoSuchLane {
                lane,
                layout: self.layout,
            }),
        }
    }

    /// The circuit's density bitmaps, computed once per circuit and shared by the devices.
    pub fn density(&self, key: &str, pce: &Pce) -> Arc<Density> {
        if let Some(d) = lock(&self.densities).get(key) {
            return Arc::clone(d);
        }
        let made = Arc::new(pce.density());
        Arc::clone(lock(&self.densities).entry(key.to_string()).or_insert(made))
    }

    fn loaded(
        &self,
        device: &DeviceState,
        key: &str,
        params: &Arc<PreparedParameters>,
        pce: &Pce,
    ) -> Result<Arc<Loaded>, GpuError> {
        device.params_for(key, params, pce, &self.density(key, pce))
    }

    /// Proves `witness` on `lane` of `device`, counting it and injecting a test fault if
    /// the plan names this proof.
    fn run(
        &self,
        device: &DeviceState,
        lane: Lane,
        loaded: &Loaded,
        witness: &mut PreparedWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<Proof, GpuError> {
        let number = self.proofs.fetch_add(1, Ordering::Relaxed) + 1;
        let mut active = device.enter();
        if self.faults.fail_alloc.contains(&number) {
            let e = device.inject_alloc_failure(number);
            tracing::warn!(lane = %lane, proof = number, error = %e, "test fault injected");
            return Err(e);
        }
        let start = Instant::now();
        let pinned_before = device.pool.stats().misses;
        let (proof, timings) =
            device.lanes[lane.worker].prove_prepared(loaded.params(), witness, r, s)?;
        // Buffers pinned by preparations while this proof ran (pinning stalls the device).
        let pinned_during = device.pool.stats().misses - pinned_before;
        tracing::debug!(
            lane = %lane,
            circuit = %loaded.key,
            ms = start.elapsed().as_millis() as u64,
            gpu_busy_ms = timings.gpu_busy_ms,
            gpu_span_ms = timings.gpu_span_ms,
            upload_ms = timings.upload_ms,
            witness_upload_gb = timings.witness_upload_bytes as f64 / 1e9,
            pinned_during,
            "proof on the GPU"
        );
        active.succeeded(timings);
        loaded.touch();
        Ok(proof)
    }

    /// Evicts idle parameters on every device.
    pub fn evict_idle(&self, idle: Duration) {
        for d in &self.devices {
            d.evict_idle(idle);
        }
    }
}

/// The CUDA backend (see the crate docs): lanes of GPU provers per device, one VRAM budget
/// per device, parameters resident per device, partitions prepared ahead of the lanes.
pub struct GpuBackend {
    // Declared first so that it stops before the devices are dropped.
    _sweeper: Option<Sweeper>,
    inner: Arc<Inner>,
    paramgen: ParamgenChoice,
}

impl fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuBackend")
            .field("layout", &self.inner.layout)
            .field(
                "devices",
                &self
                    .inner
                    .devices
                    .iter()
                    .map(|d| d.ordinal())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl GpuBackend {
    /// Opens the configured devices (all by default), sizes their VRAM budgets and starts
    /// their lanes.
    pub fn new(config: GpuConfig) -> Result<GpuBackend, GpuError> {
        if config.workers_per_device == 0 {
            return Err(GpuError::Config {
                what: "workers_per_device",
                reason: "must be at least 1".into(),
            });
        }
        let ordinals = if config.devices.is_empty() {
            let count = cuzk_cuda::device_count().map_err(|e| GpuError::NoDevice {
                reason: e.to_string(),
            })?;
            if count == 0 {
                return Err(GpuError::NoDevice {
                    reason: "the driver reports no device".into(),
                });
            }
            (0..count).collect()
        } else {
            let distinct: BTreeSet<usize> = config.devices.iter().copied().collect();
            if distinct.len() != config.devices.len() {
                return Err(GpuError::Config {
                    what: "devices",
                    reason: format!("{:?} names a device twice", config.devices),
                });
            }
            config.devices.clone()
        };
        let pinned_bytes = match config.pinned_bytes {
            Some(bytes) => bytes,
            None => {
                let host = cuzk_mem::MemInfo::read().map_err(|e| GpuError::Config {
                    what: "pinned_bytes",
                    reason: format!("cannot read the host's memory to size the pinned pools: {e}"),
                })?;
                sizes::default_pinned_bytes(host.total, ordinals.len())
            }
        };
        let devices = ordinals
            .iter()
            .enumerate()
            .map(|(index, &ordinal)| DeviceState::new(index, ordinal, &config, pinned_bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let layout = LaneLayout {
            devices: devices.len(),
            workers_per_device: config.workers_per_device,
        };
        let inner = Arc::new(Inner {
            devices,
            layout,
            densities: Mutex::new(HashMap::new()),
            faults: config.faults.clone(),
            proofs: AtomicU64::new(0),
        });
        let sweeper = match config.idle_evict {
            Some(idle) => Some(Sweeper::start(Arc::downgrade(&inner), idle).map_err(|e| {
                GpuError::Config {
                    what: "idle_evict",
                    reason: format!("cannot start the eviction thread: {e}"),
                }
            })?),
            None => None,
        };
        if !config.faults.is_empty() {
            tracing::warn!(faults = ?config.faults.fail_alloc, "TEST FAULTS ARMED: these proofs will fail a device allocation");
        }
        tracing::info!(
            devices = ?ordinals,
            lanes = %layout,
            residency = ?config.residency,
            idle_evict = ?config.idle_evict,
            paramgen = ?config.paramgen,
            "CUDA backend started"
        );
        Ok(GpuBackend {
            _sweeper: sweeper,
            inner,
            paramgen: config.paramgen,
        })
    }

    /// The driver ordinals of the devices, in lane-layout order.
    pub fn ordinals(&self) -> Vec<usize> {
        self.inner.devices.iter().map(|d| d.ordinal()).collect()
    }

    /// The VRAM budget of each device, in lane-layout order (clones sharing the ledgers).
    pub fn vram_budgets(&self) -> Vec<VramBudget> {
        self.inner.devices.iter().map(|d| d.vram.clone()).collect()
    }

    /// Host bytes the devices' pinned pools may pin, all together: keep them out of the
    /// host budget the scheduler admits partitions against.
    pub fn pinned_bytes(&self) -> u64 {
        self.inner.devices.iter().map(|d| d.pool.capacity()).sum()
    }
}

impl Backend for GpuBackend {
    type Prepared = GpuPrepared;

    fn name(&self) -> &str {
        NAME
    }

    fn lanes(&self) -> LaneLayout {
        self.inner.layout
    }

    fn partition_bytes(&self, shape: &Shape) -> u64 {
        sizes::partition_host_bytes(shape)
    }

    /// Without a prepared partition (the scheduler always prepares first): prepares on the
    /// lane itself, then proves.
    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        let device = self.inner.device(lane)?;
        let fail = |e: GpuError| e.into_backend(lane.device);
        let loaded = self
            .inner
            .loaded(device, input.circuit_key, input.params, input.pce)
            .map_err(fail)?;
        let mut witness = device
            .prepare(
                &device.lanes[lane.worker],
                &loaded,
                input.pce,
                input.witness,
            )
            .map_err(fail)?;
        self.inner
            .run(device, lane, &loaded, &mut witness, input.r, input.s)
            .map_err(fail)
    }

    fn prepare(
        &self,
        device: usize,
        input: &PrepareInput<'_>,
    ) -> Result<Option<GpuPrepared>, BackendError> {
        let lane = Lane { device, worker: 0 };
        let state = self.inner.device(lane)?;
        let loaded = self
            .inner
            .loaded(state, input.circuit_key, input.params, input.pce)
            .map_err(|e| e.into_backend(device))?;
        let witness = state
            .prepare(state.preparer(), &loaded, input.pce, input.witness)
            .map_err(|e| e.into_backend(device))?;
        Ok(Some(GpuPrepared { loaded, witness }))
    }

    fn prove_prepared(
        &self,
        lane: Lane,
        input: &ProvePreparedInput<'_>,
        prepared: GpuPrepared,
    ) -> Result<Proof, BackendError> {
        let device = self.inner.device(lane)?;
        let GpuPrepared {
            loaded,
            mut witness,
        } = prepared;
        let proved = self
            .inner
            .run(device, lane, &loaded, &mut witness, input.r, input.s);
        // The pinned set goes back to the pool now, for the next partition's preparation.
        drop(witness);
        proved.map_err(|e: GpuError| e.into_backend(lane.device))
    }

    fn load(&self, setup: &Setup, pin: bool) -> Result<LoadReport, BackendError> {
        let mut report = LoadReport {
            resident: true,
            ..LoadReport::default()
        };
        for device in &self.inner.devices {
            let already = device.lookup(&setup.circuit_key).is_some();
            let loaded = self
                .inner
                .loaded(device, &setup.circuit_key, &setup.params, &setup.pce)
                .map_err(|e| e.into_backend(device.index))?;
            if pin {
                loaded.pin();
            }
            // Pay now, once per circuit and device (also when the parameters were generated
            // there), what the first proofs would pay on first use: pinning gigabytes of
            // witness buffers stalls the device's other work, and each lane builds its NTT
            // tables on its first proof of a size. Two sets per lane (one proving, one
            // prepared ahead, as the scheduler's default lookahead keeps them) and one more
            // being prepared.
            if pin && loaded.claim_prewarm() {
                warm(device, &setup.circuit_key, &loaded);
            }
            report.devices += 1;
            report.already += usize::from(already);
            report.resident &= loaded.resident;
            report.bytes_per_device = loaded.bytes;
        }
        Ok(report)
    }

    fn evict(&self, circuit_key: &str) -> EvictReport {
        let mut report = EvictReport::default();
        for device in &self.inner.devices {
            if let Some(bytes) = device.evict(circuit_key) {
                report.was_loaded = true;
                report.freed_bytes += bytes;
            }
        }
        lock(&self.inner.densities).remove(circuit_key);
        report
    }

    fn parameter_generator(&self) -> Option<Arc<dyn ParameterGenerator>> {
        match self.paramgen {
            ParamgenChoice::Auto => Some(Arc::new(GpuParamgen::new(Arc::clone(&self.inner)))),
            ParamgenChoice::Cpu => None,
        }
    }

    fn device_stats(&self) -> Vec<DeviceStats> {
        self.inner.devices.iter().map(DeviceState::stats).collect()
    }
}

/// The pinned sets in the device's shared pool (through its preparer, which never proves;
/// as many as it has room for, the last one perhaps in part)
/// and [`cuzk_prover::GpuProver::warm`] for every lane: its NTT tables, and its MSM work
/// buffers where it is unmetered. A step that fails is logged; proofs pay it themselves then.
fn warm(device: &DeviceState, circuit: &str, loaded: &Loaded) {
    let params = loaded.params();
    let sets = 2 * device.lanes.len() + 1;
    let start = Instant::now();
    let (mut stocked, mut buffers) = (0, 0);
    let witness_only = loaded.device_pce.is_some();
    match device
        .preparer()
        .prewarm_buffers(params, sets, witness_only)
    {
        Ok(done) => (stocked, buffers) = done,
        Err(e) => {
            tracing::info!(device = device.ordinal(), %circuit, error = %e, "pinned pool not fully pre-warmed")
        }
    }
    for (lane, prover) in device.lanes.iter().enumerate() {
        if let Err(e) = prover.warm(params, 0) {
            tracing::info!(device = device.ordinal(), lane, %circuit, error = %e, "lane not warmed");
        }
    }
    tracing::info!(
        device = device.ordinal(),
        %circuit,
        sets = stocked,
        buffers,
        ms = start.elapsed().as_millis() as u64,
        "device warmed for the circuit"
    );
}
