//! Shifted copies of the H query's bases ([`cuzk_msm::gpu::MsmEngine::shift_bases`]) where an
//! unmetered prover's device has room for them beside one proof: the H MSM is a proof's
//! largest (dense, one point a domain element), and over t copies of c-bit windows t windows
//! share one set of buckets, so c can be wider than the bases alone would pay for: fewer
//! additions. Each copy costs the bases' VRAM again (12 GiB at 2^27), so copies are made only
//! from the room the proof's own MSMs do not ask for; the rest of the prover sees them through
//! the H MSM's shape (`Shapes::of`), which its warm-up reservation and allowances follow.

use super::shares::{Shapes, HEADROOM};
use super::GpuProver;
use crate::error::Result;
use crate::params::DeviceParameters;
use crate::prep::Lengths;
use cuzk_msm::gpu::MsmShape;
use cuzk_msm::{MsmCurve, G1, G2};
use std::time::Instant;

/// What [`GpuProver::copy_h`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HCopies {
    /// Copies of the H bases held, the bases themselves included (1: none).
    pub copies: u32,
    /// The window width they were made for (0 without copies).
    pub bits: u32,
    /// Device bytes the copies beyond the bases take.
    pub bytes: u64,
    /// Milliseconds making them.
    pub ms: f64,
    /// Why there are none, where there are none.
    pub skipped: Option<&'static str>,
}

impl GpuProver {
    /// Gives `params`' H bases shifted copies for [`crate::GpuProverConfig::h_copy_bits`]-bit
    /// windows, as many as the device's room holds beside one proof: a, b, c, the NTT
    /// tables, and the work buffers every MSM of the proof asks for with memory to spare
    /// (both groups, the H MSM planned over the copies). The room is a host-evaluating
    /// proof's: a lane that evaluates a, b, c on the device also holds the circuit's
    /// [`crate::DevicePce`] and [`crate::device_eval_bytes`], which the copies do not leave
    /// room for, so such lanes should not ask for copies. Only for resident parameters on an
    /// unmetered prover (a budget's lanes share the device, and their working sets are
    /// reserved proof by proof); parameters that already hold copies keep them. Call it once
    /// the parameters are placed and before [`GpuProver::warm`], whose reservations follow
    /// the copies. On an error making them (no memory after all), the bases stay as they were.
    pub fn copy_h(&self, params: &mut DeviceParameters) -> Result<HCopies> {
        let skip = |why| {
            Ok(HCopies {
                copies: 1,
                skipped: Some(why),
                ..HCopies::default()
            })
        };
        let Some(bits) = self.config.h_copy_bits else {
            return skip("not asked for");
        };
        cuzk_msm::plan::check_width(Some(bits), 1).map_err(crate::Error::from)?;
        if self.config.budget.is_some() || self.config.msm_vram.is_some() {
            return skip("a VRAM budget or a fixed MSM allowance");
        }
        let lengths = Lengths::of(&params.shape);
        let Some(h) = params.h_bases() else {
            return skip("parameters streamed");
        };
        if h.copies().0 > 1 {
            let (copies, bits) = h.copies();
            return Ok(HCopies {
                copies,
                bits,
                bytes: (h.device_bytes() - h.len() * point_bytes()) as u64,
                ..HCopies::default()
            });
        }
        let per_copy = (h.len() * point_bytes()) as u64;
        let base = *self.msm.config();
        let shapes = Shapes::of(&lengths, true, None);
        let g2_want = self.msm.wanted_bytes::<G2>(&[shapes.g2], &base)? as u64;
        // The proof's a, b, c and the NTT tables (counted whether or not they are built yet).
        let (pending, _) = self.working_set(lengths.n)?;
        let (free, _) = self.device.memory_info()?;
        let room = (free as u64 + self.msm.workspace_bytes() as u64)
            .saturating_sub(pending)
            .saturating_sub(HEADROOM);
        // Every copy of every point indexable in 31 bits (`MsmError::TableTooLarge`).
        let windows = cuzk_msm::digits::window_count(bits)
            .min((cuzk_msm::plan::MAX_POINTS / h.len().max(1)).min(u32::MAX as usize) as u32);
        let mut error = None;
        let copies = cuzk_msm::plan::most_copies(windows, |t| {
            let table = u64::from(t - 1) * per_copy;
            let over = MsmShape {
                copies: t,
                shift_bits: bits,
                ..shapes.g1[0]
            };
            let g1 = [over, shapes.g1[1], shapes.g1[2], shapes.g1[3]];
            match self.msm.wanted_bytes::<G1>(&g1, &base) {
                // Both groups keep what they ask for (`split_room` then gives each its wish).
                Ok(g1_want) => table
                    .checked_add(g1_want as u64)
                    .and_then(|b| b.checked_add(g2_want))
                    .is_some_and(|b| b <= room),
                Err(e) => {
                    error.get_or_insert(e);
                    false
                }
            }
        });
        if let Some(e) = error {
            return Err(e.into());
        }
        if copies < 2 {
            return skip("no room beside one proof");
        }
        let t = Instant::now();
        let h = params.h_bases_mut().expect("resident: checked above");
        self.msm
            .shift_in_place::<G1>(&self.stream, h, bits, copies)?;
        self.stream.synchronize()?;
        let made = HCopies {
            copies,
            bits,
            bytes: u64::from(copies - 1) * per_copy,
            ms: t.elapsed().as_secs_f64() * 1e3,
            skipped: None,
        };
        tracing::info!(
            device = self.device.ordinal(),
            copies,
            bits,
            bytes = made.bytes,
            ms = made.ms,
            "shifted copies of the H bases made"
        );
        Ok(made)
    }
}

fn point_bytes() -> usize {
    std::mem::size_of::<<G1 as MsmCurve>::AffineRepr>()
}
