//! Shifted copies of resident bases: copy k holds 2^(c·k)·P_i, so that an MSM with c-bit
//! windows adds the digits of `copies` consecutive windows into one set of buckets, each
//! window reading its base from its own copy. The buckets to sum shrink by that factor, which
//! lets a fixed set of bases (a proving key's) take wider windows, and so fewer additions,
//! than their size alone would pay for (`crate::plan::PlanInput::copies`). The copies are made
//! once, on the device (kernels/curve/bases.cu, `shift_copy`), and cost `copies − 1` times the
//! bases' VRAM.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuzk_cuda::Device;
//! use cuzk_msm::gpu::{MsmEngine, Scalars};
//! use cuzk_msm::{testing, G1};
//! let device = Device::open(0)?;
//! let stream = device.new_stream()?;
//! let engine = MsmEngine::new(&device)?;
//! let bases = engine.generate_bases::<G1>(&stream, 1 << 20, 7)?;
//! // Eleven copies for 24-bit windows: the 11 windows of a scalar share one set of buckets.
//! let copies = engine.copies_that_fit::<G1>(&bases, 24, engine.config())?;
//! let bases = engine.shift_bases::<G1>(&stream, bases, 24, copies)?;
//! let scalars = testing::to_reprs(&testing::random_scalars(1 << 20, 1));
//! let sum = engine.msm::<G1>(&stream, &bases, Scalars::Host(&scalars))?;
//! # let _ = sum; Ok(()) }
//! ```

use super::{cached_bytes, launch, lock, Bases, MsmConfig, MsmEngine, Split, VRAM_MARGIN};
use crate::curve::MsmCurve;
use crate::digits::window_count;
use crate::plan::{check_width, most_copies, Plan, MAX_POINTS};
use crate::MsmError;
use cuzk_cuda::Stream;

impl MsmEngine {
    /// `bases` with `copies` copies for `bits`-bit windows, the bases themselves the first:
    /// copy k holds 2^(bits·k)·P_i. Every later MSM over them runs with `bits`-bit windows and
    /// `copies` windows to a set of buckets. `copies` = 1 drops any copies `bases` had; bases
    /// that already hold copies are shifted again from their first copy. Empty bases are
    /// returned as they are. The engine's cached work buffers of group `C` are freed first, so
    /// that the table has the room `copies_that_fit` counted on (the next call allocates them
    /// again). Queued on `stream`; the old buffer is freed once the copies are made.
    pub fn shift_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        mut bases: Bases<C>,
        bits: u32,
        copies: u32,
    ) -> Result<Bases<C>, MsmError> {
        self.shift_in_place(stream, &mut bases, bits, copies)?;
        Ok(bases)
    }

    /// [`MsmEngine::shift_bases`] in place: on an error (no memory for the table) `bases` are
    /// left as they were, so a caller that holds them for other MSMs keeps them.
    pub fn shift_in_place<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &mut Bases<C>,
        bits: u32,
        copies: u32,
    ) -> Result<(), MsmError> {
        check_shape(bases.len(), bits, copies)?;
        let len = bases.len();
        if len == 0 || (copies == 1 && bases.copies == 1) {
            return Ok(());
        }
        // The group's work buffers make room for the table (freed memory is the pool's until
        // the stream is synchronised, see `workspace`).
        if lock(&self.workspaces).remove(C::NAME).is_some() {
            stream.synchronize()?;
        }
        let mut table = stream.alloc::<C::AffineRepr>(copies as usize * len)?;
        stream.copy_on_device(&bases.points.slice(..len), &mut table.slice_mut(..len))?;
        let span = tracing::debug_span!("shift_bases", group = C::NAME, len, bits, copies);
        let _guard = span.enter();
        for k in 1..copies {
            launch::shift_copy::<C>(stream, &self.kernels, &mut table, len, k, bits)?;
        }
        *bases = Bases {
            points: table,
            len,
            copies,
            shift_bits: if copies > 1 { bits } else { 0 },
        };
        Ok(())
    }

    /// How many copies of `bases` for `bits`-bit windows ([`MsmEngine::shift_bases`]) fit
    /// beside what one MSM over all of them needs under `config`'s allowance (all free VRAM by
    /// default) without cutting it into more chunks or passes than the bases alone take
    /// (scalars from the host, split as `Split::Always` would split them, else dense), and
    /// whose making fits what the device has free: at most the windows of that width, and no
    /// more than the fewest that give as few bucket sets (11 windows in sets of 6 need no 8
    /// copies). 1 where two do not fit, so that the MSM runs on the bases alone: the fallback
    /// where VRAM does not allow copies. Memory freed on a stream counts as used until that
    /// stream is synchronised, so callers that have just dropped buffers synchronise first.
    pub fn copies_that_fit<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        bits: u32,
        config: &MsmConfig,
    ) -> Result<u32, MsmError> {
        check_shape(bases.len(), bits, 1)?;
        let n = bases.len();
        if n == 0 {
            return Ok(1);
        }
        let affine = std::mem::size_of::<C::AffineRepr>();
        // What a call may use now, plus what the bases' current copies (beyond the first)
        // hold, which a new table replaces; and what the making can take: the device's free
        // memory and the group's cached buffers (freed first), the old bases still held.
        let spare = bases.device_bytes() - n * affine;
        let (room, making) = {
            let cache = lock(&self.workspaces);
            let (free, _) = self.device.memory_info()?;
            let making = (free + cached_bytes::<C>(&cache)).saturating_sub(VRAM_MARGIN);
            (self.allowance::<C>(&cache, config)? + spare, making)
        };
        let windows = window_count(bits);
        let split = matches!(config.split, Split::Always);
        let input = |allowance: usize| self.plan_input::<C>(n, n, split, true, config, allowance);
        // The shape the bases alone take in the whole room.
        let alone = Plan::new(&input(room))?;
        let fits = |copies: u32| -> bool {
            let Some(table) = (copies as usize - 1).checked_mul(n * affine) else {
                return false;
            };
            if table >= room || table + n * affine > making || copies as usize * n > MAX_POINTS {
                return false;
            }
            let plan = Plan::new(&crate::plan::PlanInput {
                copies,
                bits: Some(bits),
                ..input(room - table)
            });
            plan.is_ok_and(|p| p.passes() <= alone.passes() && p.chunks(n) <= alone.chunks(n))
        };
        Ok(most_copies(windows, fits))
    }
}

/// Checks a table's shape: a width the engine supports, 1 to its window count copies, and
/// every point of every copy indexable in 31 bits.
fn check_shape(len: usize, bits: u32, copies: u32) -> Result<(), MsmError> {
    check_width(Some(bits), copies)?;
    if (copies as usize).saturating_mul(len) > MAX_POINTS {
        return Err(MsmError::TableTooLarge {
            copies,
            len,
            max: MAX_POINTS,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_shapes_are_checked_before_any_device_work() {
        assert!(check_shape(1 << 26, 24, 11).is_ok());
        assert!(check_shape(0, 2, 1).is_ok());
        assert!(matches!(
            check_shape(10, 24, 12),
            Err(MsmError::BadCopies {
                copies: 12,
                bits: 24,
                max: 11
            })
        ));
        assert!(matches!(
            check_shape(10, 24, 0),
            Err(MsmError::BadCopies { copies: 0, .. })
        ));
        assert!(matches!(
            check_shape(10, 25, 2),
            Err(MsmError::BadWindow { bits: 25, .. })
        ));
        assert!(matches!(
            check_shape(1 << 28, 24, 8),
            Err(MsmError::TableTooLarge { copies: 8, .. })
        ));
        assert!(check_shape(1 << 27, 24, 11).is_ok());
    }
}
