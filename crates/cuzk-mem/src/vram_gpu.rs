//! The per-device VRAM budget, sized from the driver, and a sampler of the driver's own view
//! of device memory for checking the ledger against reality.

use crate::{Budget, Fit, MemError, Plan, Reservation, VramPolicy};
use cuzk_cuda::Device;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Free and total memory of a device, as the driver reports them now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverMemory {
    /// Bytes free.
    pub free: u64,
    /// Bytes in all.
    pub total: u64,
}

impl DriverMemory {
    /// Reads the driver's figures for `device`.
    pub fn read(device: &Device) -> Result<DriverMemory, MemError> {
        let (free, total) = device.memory_info().map_err(|source| MemError::Cuda {
            op: "memory info query",
            device: device.ordinal(),
            source: Box::new(source),
        })?;
        Ok(DriverMemory {
            free: free as u64,
            total: total as u64,
        })
    }

    /// Bytes in use on the device by anyone: this process (contexts, allocations, pools) and
    /// every other.
    pub fn used(&self) -> u64 {
        self.total.saturating_sub(self.free)
    }
}

/// The VRAM budget of one device: a [`Budget`] named `vram <ordinal>` whose capacity comes
/// from a [`VramPolicy`] (by default free memory minus 512 MiB).
///
/// Make one per device and share it by cloning: every worker on the card reserves from the
/// same ledger, so together they can never hold more than the capacity. Reserve before
/// allocating, and keep the reservation until the memory is really free: device frees are
/// ordered on their stream, so drop buffers and synchronise (or keep them in a pool) before
/// dropping the reservation.
#[derive(Clone)]
pub struct VramBudget {
    device: Device,
    budget: Budget,
    policy: VramPolicy,
}

impl VramBudget {
    /// A budget for `device` sized by `policy` from what the driver reports now.
    ///
    /// Errors as [`VramPolicy::capacity_with`] does, and with [`MemError::Cuda`] when the
    /// driver cannot be asked.
    pub fn new(device: &Device, policy: VramPolicy) -> Result<VramBudget, MemError> {
        let now = DriverMemory::read(device)?;
        let capacity = policy.capacity_with(device.ordinal(), now.free, now.total)?;
        if capacity > now.free {
            tracing::warn!(
                device = device.ordinal(),
                capacity,
                free = now.free,
                "VRAM budget larger than the memory free now"
            );
        }
        tracing::info!(
            device = device.ordinal(),
            capacity,
            human = %crate::Bytes(capacity),
            free = now.free,
            total = now.total,
            policy = ?policy,
            "VRAM budget"
        );
        Ok(VramBudget {
            device: device.clone(),
            budget: Budget::new(format!("vram {}", device.ordinal()), capacity),
            policy,
        })
    }

    /// A budget of exactly `bytes` for `device` ([`VramPolicy::Fixed`]).
    pub fn fixed(device: &Device, bytes: u64) -> Result<VramBudget, MemError> {
        VramBudget::new(device, VramPolicy::Fixed(bytes))
    }

    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The policy that sized it.
    pub fn policy(&self) -> VramPolicy {
        self.policy
    }

    /// The ledger itself, for everything a [`Budget`] offers (release listeners, blocking
    /// plan reservations, high-water resets).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.budget.capacity()
    }

    /// Bytes reserved now.
    pub fn used(&self) -> u64 {
        self.budget.used()
    }

    /// Bytes free in the ledger now.
    pub fn available(&self) -> u64 {
        self.budget.available()
    }

    /// The most bytes ever reserved at once (see [`Budget::reset_high_water`]).
    pub fn high_water(&self) -> u64 {
        self.budget.high_water()
    }

    /// [`Budget::try_reserve`].
    pub fn try_reserve(&self, bytes: u64) -> Result<Reservation, MemError> {
        self.budget.try_reserve(bytes)
    }

    /// [`Budget::reserve_blocking`].
    pub fn reserve_blocking(
        &self,
        bytes: u64,
        timeout: Option<Duration>,
    ) -> Result<Reservation, MemError> {
        self.budget.reserve_blocking(bytes, timeout)
    }

    /// [`Budget::try_reserve_up_to`]: as much as is free between `min` and `max`, e.g. an MSM
    /// allowance.
    pub fn try_reserve_up_to(&self, min: u64, max: u64) -> Result<Reservation, MemError> {
        self.budget.try_reserve_up_to(min, max)
    }

    /// [`Budget::fits`].
    pub fn fits(&self, plan: &Plan) -> Fit {
        self.budget.fits(plan)
    }

    /// [`Budget::try_reserve_first`]: the most preferred layout that fits now.
    pub fn try_reserve_first(&self, plans: &[Plan]) -> Result<(usize, Reservation), MemError> {
        self.budget.try_reserve_first(plans)
    }

    /// What the driver reports for the device now (not the ledger).
    pub fn driver_memory(&self) -> Result<DriverMemory, MemError> {
        DriverMemory::read(&self.device)
    }

    /// Starts sampling the driver's used memory on this budget's device every `every`.
    pub fn sampler(&self, every: Duration) -> Result<DriverSampler, MemError> {
        DriverSampler::start(&self.device, every)
    }
}

impl fmt::Debug for VramBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VramBudget")
            .field("device", &self.device.ordinal())
            .field("policy", &self.policy)
            .field("budget", &self.budget)
            .finish()
    }
}

/// What a [`DriverSampler`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverReport {
    /// Used bytes (total − free) when sampling started.
    pub baseline_used: u64,
    /// The most used bytes seen in any sample.
    pub peak_used: u64,
    /// Samples taken, the first included.
    pub samples: u64,
}

impl DriverReport {
    /// How far the peak rose above the baseline: the device memory the sampled work took, as
    /// the driver saw it.
    pub fn peak_above_baseline(&self) -> u64 {
        self.peak_used.saturating_sub(self.baseline_used)
    }
}

/// A thread that samples a device's used memory (total − free, from the driver) at a fixed
/// interval and keeps the peak: the check of a budget's high-water mark against the driver
/// rather than against the ledger. It sees every user of the device, other processes too.
pub struct DriverSampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<DriverReport, MemError>>>,
    device: usize,
}

impl DriverSampler {
    /// Takes a first sample (the baseline) now, then samples every `every` on a thread of its
    /// own until [`DriverSampler::stop`].
    pub fn start(device: &Device, every: Duration) -> Result<DriverSampler, MemError> {
        let first = DriverMemory::read(device)?.used();
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, device_for_thread) = (Arc::clone(&stop), device.clone());
        let handle = std::thread::Builder::new()
            .name(format!("cuzk-vram-sampler-{}", device.ordinal()))
            .spawn(move || {
                let mut report = DriverReport {
                    baseline_used: first,
                    peak_used: first,
                    samples: 1,
                };
                loop {
                    // One last sample after the stop request, so the report covers the
                    // whole sampled span.
                    let stopping = flag.load(Ordering::Acquire);
                    let used = DriverMemory::read(&device_for_thread)?.used();
                    report.peak_used = report.peak_used.max(used);
                    report.samples += 1;
                    if stopping {
                        return Ok(report);
                    }
                    std::thread::sleep(every);
                }
            })
            .map_err(|e| MemError::SamplerThread {
                device: device.ordinal(),
                reason: e.to_string(),
            })?;
        Ok(DriverSampler {
            stop,
            handle: Some(handle),
            device: device.ordinal(),
        })
    }

    /// Stops sampling and returns what was seen.
    pub fn stop(mut self) -> Result<DriverReport, MemError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<DriverReport, MemError> {
        self.stop.store(true, Ordering::Release);
        let device = self.device;
        match self.handle.take() {
            Some(handle) => handle.join().unwrap_or_else(|_| {
                Err(MemError::SamplerThread {
                    device,
                    reason: "the sampler thread panicked".into(),
                })
            }),
            None => Err(MemError::SamplerThread {
                device,
                reason: "already stopped".into(),
            }),
        }
    }
}

impl Drop for DriverSampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            // Nobody asked for the report; stop the thread rather than leave it sampling.
            let _ = self.finish();
        }
    }
}

impl fmt::Debug for DriverSampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverSampler")
            .field("device", &self.device)
            .field("running", &self.handle.is_some())
            .finish()
    }
}
