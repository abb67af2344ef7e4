//! The GPU backend (feature `cuda`): partitions proved on one CUDA device by cuzk-groth16's
//! GPU prover, each circuit's parameters placed on the device once and its density computed
//! once, then reused by every later request.

use crate::backend::PartitionProver;
use crate::error::BackendError;
use cuzk_cuda::Device;
use cuzk_field::Scalar;
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_prover::{DeviceParameters, GpuProver, GpuProverConfig, ProofTimings};
use cuzk_synth::{Density, Pce, Witness};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Instant;

/// One circuit's parameters on the device.
struct Placed {
    /// The host parameters they came from. Holding the allocation keeps its address (the
    /// key of this entry) from naming other parameters while the entry exists.
    params: Weak<PreparedParameters>,
    device: DeviceParameters,
    /// The circuit's density, computed on first use.
    density: Mutex<Option<Arc<Density>>>,
}

type Slot = Arc<Mutex<Option<Arc<Placed>>>>;

/// Counters of the work the backend did besides proving.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuBackendStats {
    /// Parameter sets placed on the device (one per circuit unless released).
    pub placements: u64,
    /// Densities computed from a PCE (one per circuit unless its PCE was reloaded).
    pub densities: u64,
    /// Partitions proved.
    pub proofs: u64,
}

/// A [`PartitionProver`] on one CUDA device: cuzk-groth16's [`GpuProver`] (one lane), with
/// the parameters of every circuit it has proved kept on the device (resident when they fit,
/// else streamed from host memory, as the prover's configuration decides).
///
/// The proofs equal cuzk's CPU prover's for the same `(r, s)`. Parameters are keyed by their
/// `Arc` (the [`crate::ParamCache`] hands out one per circuit and process); when every other
/// holder has dropped them (the cache evicted the circuit), the device copy goes on the next
/// call, or at once with [`GpuBackend::release`].
pub struct GpuBackend {
    prover: GpuProver,
    slots: Mutex<HashMap<usize, Slot>>,
    last: Mutex<Vec<ProofTimings>>,
    placements: AtomicU64,
    densities: AtomicU64,
    proofs: AtomicU64,
}

impl fmt::Debug for GpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuBackend")
            .field("prover", &self.prover)
            .field("circuits", &self.circuits())
            .field("stats", &self.stats())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every guarded value is replaced whole, so a panicking holder leaves it consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn key(params: &Arc<PreparedParameters>) -> usize {
    Arc::as_ptr(params) as usize
}

impl GpuBackend {
    /// A backend on CUDA device `ordinal` with the prover's default configuration (parameters
    /// resident when they fit the free VRAM, the device to itself).
    pub fn open(ordinal: usize) -> cuzk_prover::Result<Self> {
        let device = Device::open(ordinal)?;
        Self::new(&device, GpuProverConfig::default())
    }

    /// A backend on `device` with the given prover configuration (a VRAM budget shared with
    /// other users of the device, a residency policy, a pinned pool, …).
    pub fn new(device: &Device, config: GpuProverConfig) -> cuzk_prover::Result<Self> {
        let prover = GpuProver::new(device, config)?;
        tracing::info!(device = device.ordinal(), "GPU backend ready");
        Ok(GpuBackend {
            prover,
            slots: Mutex::new(HashMap::new()),
            last: Mutex::new(Vec::new()),
            placements: AtomicU64::new(0),
            densities: AtomicU64::new(0),
            proofs: AtomicU64::new(0),
        })
    }

    /// The GPU prover.
    pub fn prover(&self) -> &GpuProver {
        &self.prover
    }

    /// The phase timings of the partitions of the last request, in partition order.
    pub fn last_timings(&self) -> Vec<ProofTimings> {
        lock(&self.last).clone()
    }

    /// What the backend did besides proving.
    pub fn stats(&self) -> GpuBackendStats {
        GpuBackendStats {
            placements: self.placements.load(Ordering::Relaxed),
            densities: self.densities.load(Ordering::Relaxed),
            proofs: self.proofs.load(Ordering::Relaxed),
        }
    }

    /// Number of circuits whose parameters are on the device or being placed there (never
    /// waits for a placement).
    pub fn circuits(&self) -> usize {
        let slots: Vec<Slot> = lock(&self.slots).values().cloned().collect();
        slots
            .iter()
            .filter(|s| s.try_lock().map_or(true, |placed| placed.is_some()))
            .count()
    }

    /// Places `params` on the device ahead of the first proof (the first proof does it
    /// otherwise); returns whether they are resident.
    pub fn load(&self, params: &Arc<PreparedParameters>) -> cuzk_prover::Result<bool> {
        Ok(self.place(params)?.device.is_resident())
    }

    /// Drops the device copy of `params` (in-flight proofs keep theirs until they finish);
    /// true if there was one.
    pub fn release(&self, params: &Arc<PreparedParameters>) -> bool {
        let slot = lock(&self.slots).remove(&key(params));
        slot.is_some_and(|s| lock(&s).is_some())
    }

    /// The device copy of `params`, placed on first use. Concurrent first uses of one circuit
    /// wait for one placement; other circuits are not held up.
    fn place(&self, params: &Arc<PreparedParameters>) -> cuzk_prover::Result<Arc<Placed>> {
        let slot = {
            let mut slots = lock(&self.slots);
            // Parameters no one else holds any more (an evicted circuit) leave the device.
            // A slot being filled right now is locked and stays.
            slots.retain(|_, s| match s.try_lock() {
                Ok(placed) => placed.as_ref().is_none_or(|p| p.params.strong_count() > 0),
                Err(_) => true,
            });
            slots.entry(key(params)).or_default().clone()
        };
        let mut slot = lock(&slot);
        if let Some(placed) = slot.as_ref() {
            debug_assert!(std::ptr::eq(placed.params.as_ptr(), Arc::as_ptr(params)));
            return Ok(placed.clone());
        }
        let start = Instant::now();
        let device = self.prover.load(params.clone())?;
        tracing::info!(
            resident = device.is_resident(),
            bytes = device.bytes(),
            ms = start.elapsed().as_millis() as u64,
            "circuit parameters placed on the GPU"
        );
        self.placements.fetch_add(1, Ordering::Relaxed);
        let placed = Arc::new(Placed {
            params: Arc::downgrade(params),
            device,
            density: Mutex::new(None),
        });
        *slot = Some(placed.clone());
        Ok(placed)
    }

    /// The circuit's density, computed from `pce` once. Parameters belong to one circuit,
    /// so only a PCE of another shape (a caller's mistake the prover refuses anyway) is
    /// looked at again.
    fn density(&self, placed: &Placed, pce: &Pce) -> Arc<Density> {
        let mut cached = lock(&placed.density);
        if let Some(density) = cached.as_ref() {
            if density.a_aux.len() == pce.num_aux && density.b_input.len() == pce.num_inputs {
                return density.clone();
            }
        }
        let start = Instant::now();
        let density = Arc::new(pce.density());
        tracing::debug!(
            ms = start.elapsed().as_millis() as u64,
            "circuit density computed"
        );
        self.densities.fetch_add(1, Ordering::Relaxed);
        *cached = Some(density.clone());
        density
    }
}

impl PartitionProver for GpuBackend {
    fn prove(
        &self,
        params: &Arc<PreparedParameters>,
        pce: &Pce,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<Proof>, BackendError> {
        let placed = self.place(params)?;
        let density = self.density(&placed, pce);
        let proved =
            self.prover
                .prove_batch(&placed.device, pce, &density, witnesses, randomness)?;
        let (proofs, timings): (Vec<Proof>, Vec<ProofTimings>) = proved.into_iter().unzip();
        for (partition, t) in timings.iter().enumerate() {
            tracing::debug!(
                partition,
                prove_ms = t.prove_ms,
                eval_ms = t.eval_ms,
                ntt_ms = t.ntt_ms,
                msm_ms = t.msm_h_ms + t.msm_l_ms + t.msm_a_ms + t.msm_b_g1_ms + t.msm_b_g2_ms,
                idle_share = t.idle_share(),
                resident = t.resident,
                "partition proved on the GPU"
            );
        }
        self.proofs
            .fetch_add(proofs.len() as u64, Ordering::Relaxed);
        *lock(&self.last) = timings;
        Ok(proofs)
    }
}
