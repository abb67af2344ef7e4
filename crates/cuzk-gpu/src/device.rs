//! One device of the backend: its VRAM budget, its pinned host pool, its lanes and its
//! preparer, the parameters placed on it, and its counters.

use crate::residency::{needed_bytes, place, Placed, Wanted};
use crate::sizes::{self, Queries};
use crate::{GpuConfig, GpuError};
use cuzk_cuda::Device;
use cuzk_groth16::{Parameters, PreparedParameters};
use cuzk_mem::{Bytes, PinnedPool, Reservation, VramBudget};
use cuzk_plugin::{DeviceParameterStats, DeviceStats, MemoryStats};
use cuzk_prover::PreparedWitness;
use cuzk_prover::{
    device_eval_bytes, DeviceParameters, DevicePce, DeviceQueries, GpuProver, GpuProverConfig,
    ProofTimings, Residency,
};
use cuzk_synth::{Density, Pce, Witness};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Every guarded value here is replaced whole, so a panic while locked leaves it consistent.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One circuit's parameters on one device, shared by the lanes and by every partition
/// prepared with them. Dropped (device memory freed, then its VRAM reservation released)
/// once it is evicted and no partition holds it any more.
pub(crate) struct Loaded {
    pub key: String,
    params: Option<DeviceParameters>,
    pub density: Arc<Density>,
    /// The circuit's PCE on the device, when its proofs evaluate a, b, c there.
    pub device_pce: Option<Arc<DevicePce>>,
    pub queries: Queries,
    pub resident: bool,
    /// Device bytes held (0 when streamed): the parameters and the device PCE.
    pub bytes: u64,
    /// Device bytes one proof with these parameters reserves.
    pub working_set: u64,
    pinned: AtomicBool,
    /// Whether the device's pinned pool was stocked with this circuit's buffer sets.
    prewarmed: AtomicBool,
    last_used: Mutex<Instant>,
    device: Device,
    reservation: Option<Reservation>,
}

impl Loaded {
    pub fn params(&self) -> &DeviceParameters {
        self.params.as_ref().expect("present until dropped")
    }

    pub fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    pub fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    pub fn pin(&self) {
        self.pinned.store(true, Ordering::Relaxed);
    }

    pub fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Relaxed)
    }

    /// Marks the pinned pool stocked for this circuit; true only the first time.
    pub fn claim_prewarm(&self) -> bool {
        !self.prewarmed.swap(true, Ordering::Relaxed)
    }
}

impl Drop for Loaded {
    fn drop(&mut self) {
        drop(self.device_pce.take());
        drop(self.params.take());
        // Device frees are ordered on their streams: the bytes are only free, and the
        // reservation may only go, once the device has done them.
        if self.resident {
            if let Err(e) = self.device.synchronize() {
                tracing::warn!(device = self.device.ordinal(), error = %e, "synchronizing after freeing parameters failed");
            }
        }
        drop(self.reservation.take());
        tracing::info!(
            device = self.device.ordinal(),
            circuit = %self.key,
            bytes = self.bytes,
            "parameters freed on the device"
        );
    }
}

/// Proof counters of one device.
#[derive(Default)]
struct Counters {
    proofs: u64,
    failures: u64,
    busy_ms: f64,
    prepare: Duration,
    phases: Vec<(&'static str, f64)>,
    /// Proofs on the device now, and since when it has had at least one.
    active: usize,
    active_since: Option<Instant>,
    occupied: Duration,
}

/// One device and everything the backend keeps for it.
pub(crate) struct DeviceState {
    /// The device's index in the lane layout.
    pub index: usize,
    pub device: Device,
    pub vram: VramBudget,
    /// The MSM allowance of every proof here.
    pub msm_vram: u64,
    /// The pinned host pool every prepared partition's buffers are lent from.
    pub pool: PinnedPool,
    /// One prover per lane.
    pub lanes: Vec<GpuProver>,
    /// Prepares partitions on the synthesis workers (CPU only; its buffers come from the
    /// shared pool and go back to it when a lane's proof ends).
    preparer: GpuProver,
    residency: Residency,
    /// Whether circuits' PCEs go on the device when they fit ([`GpuConfig::device_eval`]).
    device_eval: bool,
    table: Mutex<HashMap<String, Arc<Loaded>>>,
    /// One placement at a time on this device, so two partitions of a new circuit do not
    /// both upload it.
    load_lock: Mutex<()>,
    /// One preparation at a time on this device: a preparation takes its pinned buffers one
    /// by one, waiting when the pool is lent out, so two at once could each hold part of a
    /// set and wait for the other forever. Alone, it only waits for sets the lanes return.
    prepare_lock: Mutex<()>,
    counters: Mutex<Counters>,
}

impl DeviceState {
    /// Opens device `ordinal` as index `index`: its VRAM budget first (before this process
    /// allocates there), then its pinned pool of `pinned_bytes`, the lanes' provers and the
    /// preparer.
    pub fn new(
        index: usize,
        ordinal: usize,
        config: &GpuConfig,
        pinned_bytes: u64,
    ) -> Result<DeviceState, GpuError> {
        let device = Device::open(ordinal).map_err(GpuError::cuda(ordinal))?;
        let vram = VramBudget::new(&device, config.vram).map_err(GpuError::budget(ordinal))?;
        let msm_vram = sizes::msm_allowance(config.msm_vram, vram.capacity());
        // The pool is its own ledger; the caller keeps its bytes out of the host budget.
        let pool = PinnedPool::new(&device, pinned_bytes, None);
        pool.set_max_idle(config.pinned_idle);
        let lane_config = GpuProverConfig {
            residency: config.residency,
            budget: Some(vram.budget().clone()),
            msm_vram: Some(msm_vram),
            pinned_pool: Some(pool.clone()),
            pinned_bytes: None,
            stream_chunk: sizes::STREAM_CHUNK,
            keep_freed_vram: config.keep_freed_vram,
            // The NTT engine's default tables: direct ones would cost every lane (each has its
            // own engine) a domain vector per direction; not chosen before it is measured.
            ntt_direct_factor_log: None,
            // No pair levels in the MSMs (they measured slower for G1); the binned scatter where
            // each plan chooses it (`cuzk_msm::plan::BIN_MIN_POINTS`) and it fits the lane's
            // allowance.
            msm_affine_levels: 0,
            msm_binned_scatter: None,
            // No overlapped uploads: a lane's reservation would count their staging.
            msm_upload_overlap: Some(false),
            // No copies of the H bases: the lanes share the device under a budget, and
            // `GpuProver::copy_h` makes copies only for unmetered provers.
            h_copy_bits: None,
        };
        let lanes = (0..config.workers_per_device)
            .map(|_| GpuProver::new(&device, lane_config.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        let preparer = GpuProver::new(
            &device,
            GpuProverConfig {
                budget: None,
                ..lane_config
            },
        )?;
        tracing::info!(
            index,
            device = %device.info(),
            lanes = lanes.len(),
            vram_budget = %Bytes(vram.capacity()),
            msm_vram = %Bytes(msm_vram),
            pinned_pool = %Bytes(pinned_bytes),
            "GPU device ready"
        );
        Ok(DeviceState {
            index,
            device,
            vram,
            msm_vram,
            pool,
            lanes,
            preparer,
            residency: config.residency,
            device_eval: config.device_eval,
            table: Mutex::new(HashMap::new()),
            load_lock: Mutex::new(()),
            prepare_lock: Mutex::new(()),
            counters: Mutex::new(Counters::default()),
        })
    }

    pub fn ordinal(&self) -> usize {
        self.device.ordinal()
    }

    /// Evaluates and lays out `witness` for `loaded`'s circuit into buffers of the pool,
    /// with `prover`'s code (the preparer's, or a lane's on the fallback path).
    pub fn prepare(
        &self,
        prover: &GpuProver,
        loaded: &Loaded,
        pce: &Pce,
        witness: &Witness,
    ) -> Result<PreparedWitness, GpuError> {
        let needed = sizes::pinned_set_pool_bytes(&loaded.queries);
        if needed > self.pool.capacity() {
            return Err(GpuError::PinnedPoolTooSmall {
                ordinal: self.ordinal(),
                circuit_key: loaded.key.clone(),
                needed,
                capacity: self.pool.capacity(),
            });
        }
        let _alone = lock(&self.prepare_lock);
        let start = Instant::now();
        let prepared = prover.prepare_with(
            loaded.params(),
            pce,
            &loaded.density,
            loaded.device_pce.as_ref(),
            witness,
        )?;
        lock(&self.counters).prepare += start.elapsed();
        Ok(prepared)
    }

    pub fn preparer(&self) -> &GpuProver {
        &self.preparer
    }

    /// The parameters of `key` on this device, if placed.
    pub fn lookup(&self, key: &str) -> Option<Arc<Loaded>> {
        let loaded = lock(&self.table).get(key).cloned()?;
        loaded.touch();
        Some(loaded)
    }

    /// The parameters of `key` on this device if they are placed and are `host`'s (the same
    /// verifying key). Parameters placed under `key` that are not (the circuit's parameters
    /// were made again, by another cache or after their file was removed) leave the table
    /// here: a partition still using them keeps them until it ends, and the caller places
    /// `host`'s.
    fn placed_for(&self, key: &str, host: &PreparedParameters) -> Option<Arc<Loaded>> {
        let mut table = lock(&self.table);
        let loaded = table.get(key)?;
        if loaded.params().vk() != host.vk() {
            tracing::warn!(
                device = self.ordinal(),
                circuit = %key,
                "the parameters placed for this circuit are not the ones it is set up with now \
                 (another verifying key): replacing them"
            );
            table.remove(key);
            return None;
        }
        let loaded = Arc::clone(loaded);
        drop(table);
        loaded.touch();
        Some(loaded)
    }

    /// The parameters of `key` on this device, placed now if they are not (see
    /// [`crate::residency`]): resident or streamed, evicting idle parameters of other
    /// circuits when that makes room. Blocks while the budget's bytes are held by proofs.
    /// Other parameters placed under `key` are replaced (see [`Self::placed_for`]).
    pub fn params_for(
        &self,
        key: &str,
        host: &Arc<PreparedParameters>,
        pce: &Pce,
        density: &Arc<Density>,
    ) -> Result<Arc<Loaded>, GpuError> {
        if let Some(loaded) = self.placed_for(key, host) {
            return Ok(loaded);
        }
        let _placing = lock(&self.load_lock);
        if let Some(loaded) = self.placed_for(key, host) {
            return Ok(loaded);
        }
        let ordinal = self.ordinal();
        let queries = Queries::of(host);
        let plain = self.wanted(&queries);
        let evaluating = self.wanted_evaluating(&queries, pce);
        let capacity = self.vram.capacity();
        let (placement, wanted, entries) = {
            let mut table = lock(&self.table);
            let entries: Vec<(String, Arc<Loaded>)> = table
                .iter()
                .map(|(k, l)| (k.clone(), Arc::clone(l)))
                .collect();
            let placed: Vec<Placed> = entries
                .iter()
                .map(|(_, l)| Placed {
                    bytes: l.bytes,
                    working_set: l.working_set,
                    // The table and `entries` hold it; anyone else is a partition using it.
                    evictable: !l.is_pinned() && Arc::strong_count(l) == 2,
                    last_used: l.last_used(),
                })
                .collect();
            // With the PCE on the device when that keeps the parameters resident, else as
            // before (the host evaluates).
            let with_pce = evaluating.and_then(|w| {
                place(self.residency, capacity, &placed, &w)
                    .filter(|p| p.resident)
                    .map(|p| (p, w))
            });
            let (placement, wanted) = match with_pce {
                Some(found) => found,
                None => (
                    place(self.residency, capacity, &placed, &plain).ok_or_else(|| {
                        GpuError::NoRoom {
                            ordinal,
                            circuit_key: key.to_string(),
                            needed: needed_bytes(self.residency, &placed, &plain),
                            capacity,
                        }
                    })?,
                    plain,
                ),
            };
            for &i in &placement.evict {
                tracing::info!(device = ordinal, circuit = %entries[i].0, for_circuit = %key, "evicting idle parameters to make room");
                table.remove(&entries[i].0);
            }
            (placement, wanted, entries)
        };
        let evaluate = placement.resident && wanted != plain;
        // The evicted entries drop here, outside the table's lock (freeing waits for the
        // device), releasing their memory and reservations.
        drop(entries);
        let start = Instant::now();
        let (bytes, working_set) = if placement.resident {
            (wanted.bytes, wanted.resident_working_set)
        } else {
            (0, wanted.streamed_working_set)
        };
        let reservation = if placement.resident {
            Some(
                self.vram
                    .reserve_blocking(bytes, None)
                    .map_err(GpuError::budget(ordinal))?,
            )
        } else {
            None
        };
        // The lanes' provers would reserve the points a second time; the reservation above
        // already holds them, so an unmetered prover uploads.
        let loader = GpuProver::new(
            &self.device,
            GpuProverConfig {
                residency: if placement.resident {
                    Residency::Resident
                } else {
                    Residency::Streamed
                },
                budget: None,
                pinned_pool: Some(self.pool.clone()),
                ..GpuProverConfig::default()
            },
        )?;
        let params = loader.load(Arc::clone(host))?;
        let (device_pce, bytes, working_set, reservation) = if evaluate {
            self.place_pce(
                &loader,
                key,
                pce,
                density,
                &plain,
                (bytes, working_set),
                reservation,
            )
        } else {
            (None, bytes, working_set, reservation)
        };
        drop(loader);
        let loaded = Arc::new(Loaded {
            key: key.to_string(),
            params: Some(params),
            density: Arc::clone(density),
            device_pce,
            queries,
            resident: placement.resident,
            bytes,
            working_set,
            pinned: AtomicBool::new(false),
            prewarmed: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
            device: self.device.clone(),
            reservation,
        });
        lock(&self.table).insert(key.to_string(), Arc::clone(&loaded));
        tracing::info!(
            device = ordinal,
            circuit = %key,
            resident = placement.resident,
            eval_on_device = loaded.device_pce.is_some(),
            bytes = %Bytes(bytes),
            working_set = %Bytes(working_set),
            ms = start.elapsed().as_millis() as u64,
            "parameters placed"
        );
        Ok(loaded)
    }

    /// What placing parameters of `queries` with `pce` on the device asks of it, when this
    /// device evaluates on the device and the PCE can go there.
    fn wanted_evaluating(&self, queries: &Queries, pce: &Pce) -> Option<Wanted> {
        if !self.device_eval || self.residency == Residency::Streamed {
            return None;
        }
        let pce_bytes = DevicePce::bytes_for(pce)?;
        let plain = self.wanted(queries);
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let extra = device_eval_bytes(
            pce.num_inputs,
            pce.num_aux,
            count(queries.a),
            count(queries.b_g1),
        );
        Some(Wanted {
            bytes: plain.bytes + pce_bytes,
            resident_working_set: plain.resident_working_set + extra,
            streamed_working_set: plain.streamed_working_set,
        })
    }

    /// Uploads `pce` with `loader` beside parameters placed for it; returns it with the
    /// placement's bytes and working set (`placed`) and its reservation. If the upload fails
    /// the circuit's proofs evaluate on the host: the figures become `plain`'s and the
    /// reservation shrinks to them.
    #[allow(clippy::too_many_arguments)]
    fn place_pce(
        &self,
        loader: &GpuProver,
        key: &str,
        pce: &Pce,
        density: &Density,
        plain: &Wanted,
        placed: (u64, u64),
        reservation: Option<Reservation>,
    ) -> (Option<Arc<DevicePce>>, u64, u64, Option<Reservation>) {
        let start = Instant::now();
        match loader.place_pce(pce, density) {
            Ok(dp) => {
                tracing::info!(
                    device = self.ordinal(),
                    circuit = %key,
                    bytes = %Bytes(dp.bytes()),
                    ms = start.elapsed().as_millis() as u64,
                    "PCE placed on the device: a, b, c are evaluated there"
                );
                (Some(Arc::new(dp)), placed.0, placed.1, reservation)
            }
            Err(e) => {
                self.warn_pce_failed(key, &e);
                let reservation = reservation.map(|mut r| {
                    r.shrink_to(plain.bytes);
                    r
                });
                (None, plain.bytes, plain.resident_working_set, reservation)
            }
        }
    }

    /// What placing parameters of `queries` asks of this device.
    fn wanted(&self, queries: &Queries) -> Wanted {
        let n = queries.domain();
        Wanted {
            bytes: queries.resident_bytes(),
            resident_working_set: sizes::resident_working_set(n, self.msm_vram),
            streamed_working_set: sizes::streamed_working_set(n, self.msm_vram),
        }
    }

    /// Whether parameters of `queries` would be resident here now without evicting
    /// anything, beside `extra` more bytes (held by whoever asks).
    pub fn would_keep(&self, queries: &Queries, extra: u64) -> bool {
        let mut wanted = self.wanted(queries);
        wanted.bytes += extra;
        self.fits_beside_placed(&wanted)
    }

    /// Whether `wanted` would be resident here now without evicting anything.
    fn fits_beside_placed(&self, wanted: &Wanted) -> bool {
        if self.residency == Residency::Streamed {
            return false;
        }
        let table = lock(&self.table);
        let placed: Vec<Placed> = table
            .values()
            .map(|l| Placed {
                bytes: l.bytes,
                working_set: l.working_set,
                evictable: false,
                last_used: l.last_used(),
            })
            .collect();
        place(Residency::Resident, self.vram.capacity(), &placed, wanted).is_some()
    }

    /// Takes over the query points the GPU parameter generator left on this device for
    /// circuit `key` (`params` are the host parameters it made), with `reservation` holding
    /// at least their bytes; nothing is uploaded again. Refused (the points freed) when the
    /// placement rule would not hold or the circuit is placed already. `pce` goes beside them
    /// when the rule holds with it too (see [`Self::params_for`]).
    pub fn adopt(
        &self,
        key: &str,
        params: &Parameters,
        pce: &Pce,
        device_queries: DeviceQueries,
        density: &Arc<Density>,
        mut reservation: Reservation,
    ) -> Result<bool, GpuError> {
        let _placing = lock(&self.load_lock);
        let queries = Queries {
            h: params.h.len() as u64,
            l: params.l.len() as u64,
            a: params.a.len() as u64,
            b_g1: params.b_g1.len() as u64,
            b_g2: params.b_g2.len() as u64,
        };
        if lock(&self.table).contains_key(key) || !self.would_keep(&queries, 0) {
            drop(device_queries);
            self.device
                .synchronize()
                .map_err(GpuError::cuda(self.ordinal()))?;
            return Ok(false);
        }
        let plain = self.wanted(&queries);
        let dp = DeviceParameters::adopt(&self.device, params, device_queries, None)?;
        let evaluating = self
            .wanted_evaluating(&queries, pce)
            .filter(|w| self.fits_beside_placed(w));
        let (device_pce, wanted) = match evaluating {
            Some(w) => match self.adopt_pce(pce, density, &mut reservation, w.bytes) {
                Ok(p) => (Some(Arc::new(p)), w),
                Err(e) => {
                    self.warn_pce_failed(key, &e);
                    (None, plain)
                }
            },
            None => (None, plain),
        };
        reservation.shrink_to(wanted.bytes);
        let loaded = Arc::new(Loaded {
            key: key.to_string(),
            params: Some(dp),
            density: Arc::clone(density),
            device_pce,
            queries,
            resident: true,
            bytes: wanted.bytes,
            working_set: wanted.resident_working_set,
            pinned: AtomicBool::new(false),
            prewarmed: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
            device: self.device.clone(),
            reservation: Some(reservation),
        });
        lock(&self.table).insert(key.to_string(), loaded);
        tracing::info!(
            device = self.ordinal(),
            circuit = %key,
            bytes = %Bytes(wanted.bytes),
            "parameters made on the device kept there (no upload)"
        );
        Ok(true)
    }

    fn warn_pce_failed(&self, key: &str, e: &dyn std::fmt::Display) {
        tracing::warn!(
            device = self.ordinal(),
            circuit = %key,
            error = %e,
            "placing the PCE on the device failed: the host evaluates a, b, c"
        );
    }

    /// Grows `reservation` to `bytes` (without waiting) and uploads `pce` with the preparer.
    fn adopt_pce(
        &self,
        pce: &Pce,
        density: &Density,
        reservation: &mut Reservation,
        bytes: u64,
    ) -> Result<DevicePce, GpuError> {
        let ordinal = self.ordinal();
        if reservation.bytes() < bytes {
            let more = self
                .vram
                .budget()
                .try_reserve(bytes - reservation.bytes())
                .map_err(GpuError::budget(ordinal))?;
            reservation.merge(more).map_err(GpuError::budget(ordinal))?;
        }
        Ok(self.preparer.place_pce(pce, density)?)
    }

    /// Removes `key`'s parameters; returns the device bytes they hold (freed now, or when
    /// the last partition using them ends).
    pub fn evict(&self, key: &str) -> Option<u64> {
        let loaded = lock(&self.table).remove(key)?;
        Some(loaded.bytes)
    }

    /// Evicts unpinned parameters no partition uses and no proof used for `idle`.
    pub fn evict_idle(&self, idle: Duration) {
        let evicted: Vec<Arc<Loaded>> = {
            let mut table = lock(&self.table);
            let stale: Vec<String> = table
                .iter()
                .filter(|(_, l)| {
                    !l.is_pinned() && Arc::strong_count(l) == 1 && l.last_used().elapsed() >= idle
                })
                .map(|(k, _)| k.clone())
                .collect();
            stale.iter().filter_map(|key| table.remove(key)).collect()
        };
        if evicted.is_empty() {
            return;
        }
        for loaded in &evicted {
            tracing::info!(device = self.ordinal(), circuit = %loaded.key, idle = ?idle, "evicting idle parameters");
        }
        drop(evicted);
        // The device memory they held goes back to the driver, not only to the pool that
        // keeps freed memory for the next proofs.
        let trimmed = self
            .device
            .synchronize()
            .and_then(|()| self.device.trim_freed_memory());
        if let Err(e) = trimmed {
            tracing::warn!(device = self.ordinal(), error = %e, "freed device memory not given back");
        }
    }

    /// A proof starts on this device; the guard counts it until it ends.
    pub fn enter(&self) -> Active<'_> {
        let mut c = lock(&self.counters);
        if c.active == 0 {
            c.active_since = Some(Instant::now());
        }
        c.active += 1;
        Active {
            device: self,
            timings: None,
        }
    }

    fn leave(&self, timings: Option<&ProofTimings>) {
        let mut c = lock(&self.counters);
        c.active -= 1;
        if c.active == 0 {
            if let Some(since) = c.active_since.take() {
                c.occupied += since.elapsed();
            }
        }
        match timings {
            None => c.failures += 1,
            Some(t) => {
                c.proofs += 1;
                c.busy_ms += t.gpu_busy_ms;
                for (name, ms) in t.phases() {
                    match c.phases.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, sum)) => *sum += ms,
                        None => c.phases.push((name, ms)),
                    }
                }
            }
        }
    }

    /// Makes a real device allocation fail: more bytes than the device has.
    pub fn inject_alloc_failure(&self, proof: u64) -> GpuError {
        let ordinal = self.ordinal();
        let bytes = (self.device.info().total_memory as u64).saturating_mul(4);
        let attempt = self
            .device
            .new_stream()
            .and_then(|s| s.alloc::<u8>(bytes as usize).map(drop));
        match attempt {
            Err(source) => GpuError::InjectedFault {
                proof,
                ordinal,
                bytes,
                source: Box::new(source),
            },
            Ok(()) => GpuError::FaultNotInjected { ordinal, bytes },
        }
    }

    pub fn stats(&self) -> DeviceStats {
        let now = Instant::now();
        let c = lock(&self.counters);
        let occupied = c.occupied + c.active_since.map_or(Duration::ZERO, |t| now - t);
        let ms = |ms: f64| Duration::from_secs_f64(ms.max(0.0) / 1e3);
        let (free, total) = self.device.memory_info().unwrap_or((0, 0));
        let budget = self.vram.budget();
        let pinned = self.pool.stats();
        let parameters = lock(&self.table)
            .values()
            .map(|l| DeviceParameterStats {
                circuit_key: l.key.clone(),
                bytes: l.bytes,
                resident: l.resident,
                eval_on_device: l.device_pce.is_some(),
                pinned: l.is_pinned(),
                in_use: Arc::strong_count(l) - 1,
                idle: l.last_used().elapsed(),
            })
            .collect();
        DeviceStats {
            index: self.index,
            ordinal: self.ordinal(),
            name: self.device.info().name.clone(),
            proofs: c.proofs,
            failures: c.failures,
            busy: ms(c.busy_ms),
            occupied,
            prepare: c.prepare,
            phases: c
                .phases
                .iter()
                .map(|&(name, sum)| (name.to_string(), ms(sum)))
                .collect(),
            memory: Some(MemoryStats {
                budget: budget.name().to_string(),
                capacity: budget.capacity(),
                used: budget.used(),
                high_water: budget.high_water(),
            }),
            pinned: Some(MemoryStats {
                budget: format!("pinned {}", self.ordinal()),
                capacity: pinned.capacity,
                used: pinned.pinned_bytes,
                high_water: pinned.high_water_bytes,
            }),
            driver_free: free as u64,
            driver_total: total as u64,
            parameters,
        }
    }
}

/// A proof on a device, counted until dropped (also when the proof panics).
pub(crate) struct Active<'a> {
    device: &'a DeviceState,
    timings: Option<ProofTimings>,
}

impl Active<'_> {
    /// The proof succeeded with `timings`.
    pub fn succeeded(&mut self, timings: ProofTimings) {
        self.timings = Some(timings);
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.device.leave(self.timings.as_ref());
    }
}
