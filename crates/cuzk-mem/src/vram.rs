//! How a device's VRAM budget is sized: free or total memory minus a margin, or a fixed
//! figure. CUDA-free, so configuration can be read and checked without a GPU.

use crate::MemError;

/// The VRAM kept back from every automatic budget, 512 MiB: room for the CUDA context's own
/// growth, the driver's allocation granularity, and libraries that allocate outside the
/// ledger.
pub const DEFAULT_VRAM_MARGIN: u64 = 512 << 20;

/// How a device's VRAM budget gets its capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VramPolicy {
    /// The memory the driver reports free when the budget is made, minus `margin` bytes.
    /// Make the budget at start-up, before this process allocates, so that it covers the
    /// whole usable card.
    Free {
        /// Bytes kept back.
        margin: u64,
    },
    /// The device's total memory minus `margin` bytes, for a device this process has to
    /// itself (what other processes or earlier allocations hold is not subtracted).
    Total {
        /// Bytes kept back.
        margin: u64,
    },
    /// Exactly this many bytes (e.g. 16 GiB, to run as a smaller card would); refused when
    /// more than the device has.
    Fixed(u64),
}

impl Default for VramPolicy {
    /// Free memory minus [`DEFAULT_VRAM_MARGIN`].
    fn default() -> VramPolicy {
        VramPolicy::Free {
            margin: DEFAULT_VRAM_MARGIN,
        }
    }
}

impl VramPolicy {
    /// The capacity this policy gives device `device` with `free` of `total` bytes.
    ///
    /// Errors with [`MemError::NoDeviceMemory`] when the margin leaves nothing, with
    /// [`MemError::FixedExceedsDevice`] for a fixed figure above `total`, and with
    /// [`MemError::ZeroCapacity`] for a fixed figure of 0.
    pub fn capacity_with(&self, device: usize, free: u64, total: u64) -> Result<u64, MemError> {
        let (base, margin) = match *self {
            VramPolicy::Fixed(0) => return Err(MemError::ZeroCapacity),
            VramPolicy::Fixed(fixed) if fixed > total => {
                return Err(MemError::FixedExceedsDevice {
                    device,
                    fixed,
                    total,
                })
            }
            VramPolicy::Fixed(fixed) => return Ok(fixed),
            VramPolicy::Free { margin } => (free, margin),
            VramPolicy::Total { margin } => (total, margin),
        };
        if base <= margin {
            return Err(MemError::NoDeviceMemory {
                device,
                base,
                margin,
            });
        }
        Ok(base - margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn policies_size_the_budget() {
        let (free, total) = (100 * GIB, 140 * GIB);
        assert_eq!(
            VramPolicy::default().capacity_with(0, free, total).unwrap(),
            100 * GIB - (512 << 20)
        );
        assert_eq!(
            VramPolicy::Total { margin: GIB }
                .capacity_with(0, free, total)
                .unwrap(),
            139 * GIB
        );
        assert_eq!(
            VramPolicy::Fixed(16 * GIB)
                .capacity_with(0, free, total)
                .unwrap(),
            16 * GIB
        );
    }

    #[test]
    fn impossible_policies_are_named() {
        let err = VramPolicy::default()
            .capacity_with(3, 256 << 20, 16 * GIB)
            .unwrap_err();
        assert!(matches!(
            err,
            MemError::NoDeviceMemory {
                device: 3,
                base,
                margin: DEFAULT_VRAM_MARGIN,
            } if base == 256 << 20
        ));
        let err = VramPolicy::Fixed(200 * GIB)
            .capacity_with(1, GIB, 140 * GIB)
            .unwrap_err();
        assert!(matches!(
            err,
            MemError::FixedExceedsDevice { device: 1, .. }
        ));
        assert!(err.to_string().contains(&(200 * GIB).to_string()), "{err}");
        assert!(matches!(
            VramPolicy::Fixed(0).capacity_with(0, GIB, GIB),
            Err(MemError::ZeroCapacity)
        ));
    }
}
