//! Paying at placement what the first proofs of a parameter set would otherwise pay on first
//! use: pinned witness buffers, the NTT tables of the domain, and the MSMs' device work
//! buffers. Measured on the H200 at 2^27 (docs/perf.md, issue 17 item 4): without it the first
//! partitions' MSMs stretch while the next partition pins its buffers, and the first NTT and H
//! MSM at a size take 0.7 s and 2.2 s longer than steady ones.

use super::shares::Shapes;
use super::GpuProver;
use crate::error::Result;
use crate::pack::Packed;
use crate::params::DeviceParameters;
use crate::prep::Lengths;
use cuzk_mem::size_class;
use cuzk_msm::{G1, G2};
use std::time::Instant;

/// What [`GpuProver::warm`] did, each step timed on the host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Warmed {
    /// Witness buffer sets stocked in the pinned pool.
    pub sets: usize,
    /// Pinned buffers stocked in all: those of the whole sets and of a part set filling the
    /// pool's room ([`GpuProver::prewarm`]).
    pub buffers: usize,
    /// Milliseconds pinning them.
    pub pinned_ms: f64,
    /// Milliseconds building the NTT tables of the parameters' domain.
    pub tables_ms: f64,
    /// Device bytes of MSM work buffers held for the first proof (0 when skipped: under a
    /// VRAM budget each proof reserves and frees its own, and streamed parameters plan theirs
    /// around each chunk).
    pub workspace_bytes: u64,
    /// Milliseconds allocating them.
    pub workspaces_ms: f64,
}

impl Warmed {
    /// Milliseconds of all the steps.
    pub fn total_ms(&self) -> f64 {
        self.pinned_ms + self.tables_ms + self.workspaces_ms
    }
}

impl GpuProver {
    /// Pays now what the first proofs for `params` would pay on first use: `sets` pinned
    /// witness buffer sets ([`GpuProver::prewarm`]; a proving pipeline holds three: one
    /// proving, one prepared, one being prepared), the NTT tables of their domain, and, for
    /// resident parameters on an unmetered prover, the work buffers of their five MSMs, sized
    /// by the plans those MSMs will choose. Call it once the parameters are placed; proofs
    /// are the same with or without it.
    pub fn warm(&self, params: &DeviceParameters, sets: usize) -> Result<Warmed> {
        let t = Instant::now();
        let (sets, buffers) = self.prewarm_buffers(params, sets, false)?;
        let pinned_ms = ms_since(t);

        let lengths = Lengths::of(&params.shape);
        let t = Instant::now();
        self.ntt
            .prepare(&self.stream, lengths.n.trailing_zeros().max(1))?;
        self.stream.synchronize()?;
        let tables_ms = ms_since(t);

        let t = Instant::now();
        let mut workspace_bytes = 0;
        if self.config.budget.is_none() && params.is_resident() {
            let (_, msm_default) = self.working_set(lengths.n)?;
            // The proof's a, b and c are on the device while its MSMs run; each MSM as the
            // proof calls it (H on the device, the others from pinned host memory), with the
            // allowances the proof will find.
            let abc = super::abc_bytes(lengths.n);
            let shapes = Shapes::of(&lengths, true, params.h_bases());
            let configs = self.msm_configs(msm_default, Some((&shapes, abc)))?;
            // The G1 MSMs' plans in one workspace: where they do not fit the allowance
            // together, each call runs its plan cut to it instead of reallocating.
            let g1 = self
                .msm
                .reserve::<G1>(&self.stream, &shapes.g1, abc as usize, &configs.g1)?;
            let g2 =
                self.msm
                    .reserve::<G2>(&self.stream, &[shapes.g2], abc as usize, &configs.g2)?;
            workspace_bytes = (g1 + g2) as u64;
        }
        let workspaces_ms = ms_since(t);
        let warmed = Warmed {
            sets,
            buffers,
            pinned_ms,
            tables_ms,
            workspace_bytes,
            workspaces_ms,
        };
        tracing::debug!(?warmed, "prover warmed");
        Ok(warmed)
    }

    /// How many MSM workspaces this prover has allocated so far: a proof whose MSMs find
    /// their work buffers ready (after [`GpuProver::warm`], or in the steady state) adds none.
    pub fn msm_workspace_allocations(&self) -> u64 {
        self.msm.workspace_allocations()
    }

    /// Pins up to `sets` witness buffer sets for `params` in the prover's pinned pool now,
    /// no more than the pool has room for (so stocking never evicts anything), so that the
    /// first proofs do not pin them: pinning gigabytes takes seconds and holds up the device's
    /// other work. When the last set does not fit whole, its first buffers (in the order a
    /// preparation takes them) fill the room that is left: a preparation then takes those and
    /// waits for a proof to return the rest instead of pinning while that proof's MSMs run.
    /// Returns the whole sets stocked (0 when the pool has no room for one).
    pub fn prewarm(&self, params: &DeviceParameters, sets: usize) -> Result<usize> {
        Ok(self.prewarm_buffers(params, sets, false)?.0)
    }

    /// [`GpuProver::prewarm`], also returning the buffers stocked (those of a part set too).
    /// With `witness_only`, a set is what a witness prepared for evaluation on the device
    /// takes ([`GpuProver::prepare_with`]): the bit arrays of its packed aux assignment (the
    /// buffer of its other values depends on the witness and is pinned by the first).
    pub fn prewarm_buffers(
        &self,
        params: &DeviceParameters,
        sets: usize,
        witness_only: bool,
    ) -> Result<(usize, usize)> {
        let lengths = Lengths::of(&params.shape);
        let (all, bits) = (
            lengths.buffer_bytes(),
            Packed::bit_buffer_bytes(lengths.aux),
        );
        let buffers: &[u64] = if witness_only { &bits } else { &all };
        let classes: Option<Vec<u64>> = buffers.iter().map(|&b| size_class(b)).collect();
        let Some(classes) = classes else {
            return Ok((0, 0));
        };
        let room = self
            .pool
            .capacity()
            .saturating_sub(self.pool.stats().pinned_bytes);
        let (whole, count) = stock_plan(&classes, sets, room);
        let wanted: Vec<u64> = buffers.iter().copied().cycle().take(count).collect();
        self.pool.prewarm(&wanted)?;
        tracing::debug!(
            sets = whole,
            buffers = count,
            "pinned witness buffers stocked"
        );
        Ok((whole, count))
    }
}

/// How much of `sets` sets of buffers of pool classes `classes` (in the order they are
/// taken) fits in `room` bytes: the whole sets, and the buffers in all, taken in order until
/// one does not fit.
fn stock_plan(classes: &[u64], sets: usize, room: u64) -> (usize, usize) {
    let mut used = 0u64;
    let mut count = 0;
    for &class in classes.iter().cycle().take(sets * classes.len()) {
        match used.checked_add(class) {
            Some(total) if total <= room => used = total,
            _ => break,
        }
        count += 1;
    }
    (count / classes.len().max(1), count)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::stock_plan;

    #[test]
    fn stocking_fills_the_room_with_whole_sets_then_the_first_buffers_of_one_more() {
        let set = [4, 4, 4, 2, 1, 1];
        assert_eq!(stock_plan(&set, 3, 100), (3, 18));
        assert_eq!(stock_plan(&set, 3, 16), (1, 6));
        // One set and room for a, b and c of the next (12 more bytes), not its aux.
        assert_eq!(stock_plan(&set, 3, 16 + 13), (1, 9));
        assert_eq!(stock_plan(&set, 3, 3), (0, 0));
        assert_eq!(stock_plan(&set, 0, 100), (0, 0));
        // Stops at the first buffer that does not fit, in the order a preparation takes them.
        assert_eq!(stock_plan(&set, 1, 12 + 1), (0, 3));
    }
}
