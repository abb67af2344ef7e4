//! How the CUDA backend runs: devices, lanes, VRAM, residency, parameter generation, and
//! the test-only fault plan.

use crate::GpuError;
use cuzk_mem::VramPolicy;
use cuzk_prover::Residency;
use std::collections::BTreeSet;
use std::time::Duration;

/// The environment variable of the test-only fault plan: a comma-separated list of proof
/// numbers (1 = the backend's first proof) whose device allocation is made to fail.
pub const FAULT_ENV: &str = "CUZK_TEST_FAIL_GPU_ALLOC";

/// Where parameters for circuits without supplied ones are generated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ParamgenChoice {
    /// On the GPU (the device with the most VRAM free), falling back to the CPU generator
    /// when that fails.
    #[default]
    Auto,
    /// On the CPU.
    Cpu,
}

/// Test-only: proofs whose device allocation is made to fail. Never set in production.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Proof numbers, counted from 1 over the whole backend in the order lanes start them.
    pub fail_alloc: BTreeSet<u64>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// Reads `text`: proof numbers separated by commas, e.g. `1,3`; empty for none.
    pub fn parse(text: &str) -> Result<FaultPlan, GpuError> {
        let mut fail_alloc = BTreeSet::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let n: u64 = part.parse().map_err(|_| GpuError::Config {
                what: FAULT_ENV,
                reason: format!("{part:?} is not a proof number (1, 2, …)"),
            })?;
            if n == 0 {
                return Err(GpuError::Config {
                    what: FAULT_ENV,
                    reason: "proof numbers start at 1".into(),
                });
            }
            fail_alloc.insert(n);
        }
        Ok(FaultPlan { fail_alloc })
    }

    /// The plan in [`FAULT_ENV`], or none when it is unset.
    pub fn from_env() -> Result<FaultPlan, GpuError> {
        match std::env::var(FAULT_ENV) {
            Ok(text) => FaultPlan::parse(&text),
            Err(_) => Ok(FaultPlan::none()),
        }
    }

    /// Whether there is any fault to inject.
    pub fn is_empty(&self) -> bool {
        self.fail_alloc.is_empty()
    }
}

/// The CUDA backend's configuration.
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// Ordinals of the devices to use; empty: every device the driver reports.
    pub devices: Vec<usize>,
    /// Prover lanes per device (`gpu_workers_per_device`).
    pub workers_per_device: usize,
    /// How each device's VRAM budget is sized (default: free memory − 512 MiB).
    pub vram: VramPolicy,
    /// Device bytes one MSM may use for work buffers (`None`: 8 GiB, at most a quarter of
    /// the budget). Smaller values chunk MSMs; results are the same.
    pub msm_vram: Option<u64>,
    /// Where parameters live: `Auto` (resident when they fit, else streamed), `Resident`
    /// (refuse what does not fit), `Streamed`.
    pub residency: Residency,
    /// Evict parameters no proof has used for this long (not preloaded ones); `None`: keep
    /// them until room is needed or `EvictSRS` asks.
    pub idle_evict: Option<Duration>,
    /// Host bytes of each device's pinned pool, from which every prepared partition's
    /// a, b, c and MSM scalars are lent (`None`: a quarter of the host's memory over the
    /// devices, at most 64 GiB each). It bounds the partitions prepared ahead: preparing
    /// waits while the pool is lent out. The caller keeps these bytes out of the host
    /// budget it admits partitions against ([`crate::GpuBackend::pinned_bytes`]).
    pub pinned_bytes: Option<u64>,
    /// Free pinned-pool buffers idle this long (default two minutes; `None`: keep them up to
    /// the pool's size), so that memory pinned for a burst goes back to the host after it.
    pub pinned_idle: Option<Duration>,
    /// Where parameters are generated.
    pub paramgen: ParamgenChoice,
    /// Evaluate a, b, c on the device: a circuit's PCE is placed beside its resident
    /// parameters when the VRAM budget holds both (and the larger working set), so a proof
    /// uploads only the witness; otherwise, and with streamed parameters, the host evaluates.
    pub device_eval: bool,
    /// Let the device keep the memory proofs free mapped, up to the VRAM budget, for the next
    /// proofs' allocations (instead of unmapping it at every synchronisation); idle eviction
    /// gives it back.
    pub keep_freed_vram: bool,
    /// Test-only faults.
    pub faults: FaultPlan,
}

/// How long a pinned-pool buffer may sit idle before it is freed, by default: far longer than
/// the gap between partitions of a busy daemon (seconds), short enough that what a burst of
/// demand pinned goes back within a minute, so the pool follows the recent load rather than
/// its highest peak. The buffer sets pre-warmed for a preloaded circuit are kept however long
/// they sit idle.
pub const DEFAULT_PINNED_IDLE: Duration = Duration::from_secs(30);

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            device_eval: true,
            keep_freed_vram: true,
            devices: Vec::new(),
            workers_per_device: 2,
            vram: VramPolicy::default(),
            msm_vram: None,
            residency: Residency::Auto,
            idle_evict: None,
            pinned_bytes: None,
            pinned_idle: Some(DEFAULT_PINNED_IDLE),
            paramgen: ParamgenChoice::Auto,
            faults: FaultPlan::none(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_plans_read_proof_numbers() {
        assert_eq!(FaultPlan::parse("").unwrap(), FaultPlan::none());
        let plan = FaultPlan::parse(" 1, 3,3 ").unwrap();
        assert_eq!(plan.fail_alloc, BTreeSet::from([1, 3]));
        assert!(!plan.is_empty());
        assert!(FaultPlan::parse("0").is_err());
        let err = FaultPlan::parse("first").unwrap_err().to_string();
        assert!(err.contains(FAULT_ENV) && err.contains("first"), "{err}");
    }
}
