//! What a backend reports about its devices.

use std::time::Duration;

/// A memory budget (the host's, a device's VRAM, a pinned pool): its capacity and use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Its name.
    pub budget: String,
    /// Capacity in bytes.
    pub capacity: u64,
    /// Bytes reserved now.
    pub used: u64,
    /// Most bytes reserved at once so far.
    pub high_water: u64,
}

/// One device of a backend: what it proved, how busy its GPU was, its VRAM budget and the
/// parameters placed on it. Times are sums since start, so rates come from differences of
/// two snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceStats {
    /// The device's index in the backend's lane layout (`d<index>` in lane names).
    pub index: usize,
    /// The driver's ordinal of the device.
    pub ordinal: usize,
    /// What the device is, e.g. `NVIDIA H200`.
    pub name: String,
    /// Proofs made on it.
    pub proofs: u64,
    /// Proofs that failed on it.
    pub failures: u64,
    /// Kernel time of its proofs, summed (two lanes computing at once both count, so this
    /// can grow faster than wall time).
    pub busy: Duration,
    /// Wall time during which at least one proof was on the device.
    pub occupied: Duration,
    /// CPU time preparing partitions for it ahead of its lanes, summed.
    pub prepare: Duration,
    /// Time per proof phase (`ntt`, `msm_h`, …), summed over its proofs.
    pub phases: Vec<(String, Duration)>,
    /// Its VRAM budget.
    pub memory: Option<MemoryStats>,
    /// Its pinned host pool (`used`: bytes pinned now, idle and lent).
    pub pinned: Option<MemoryStats>,
    /// Device memory the driver reports free now.
    pub driver_free: u64,
    /// Device memory in all.
    pub driver_total: u64,
    /// Parameters placed on the device.
    pub parameters: Vec<DeviceParameterStats>,
}

/// One circuit's parameters on a device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceParameterStats {
    /// The circuit.
    pub circuit_key: String,
    /// Device bytes they hold (0 when streamed).
    pub bytes: u64,
    /// Uploaded and kept on the device (rather than streamed from the host per proof).
    pub resident: bool,
    /// The circuit's PCE is on the device beside them: its proofs evaluate a, b, c there.
    pub eval_on_device: bool,
    /// Kept from idle eviction (preloaded).
    pub pinned: bool,
    /// Partitions prepared or proving with them now.
    pub in_use: usize,
    /// Time since a proof last used them.
    pub idle: Duration,
}
