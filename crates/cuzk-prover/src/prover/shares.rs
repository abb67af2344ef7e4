//! How a proof's MSM work buffers share the device between the two groups.
//!
//! The MSM engine keeps one workspace per group, and a proof holds both at once: its G2 MSM
//! (B₂) runs between G1 MSMs (L, A, B₁ before it, H after it). So each group gets its own
//! allowance, and a proof counts both: G1's, and G2's of at most a quarter of it. A single
//! allowance for both let each workspace fill it, so a proof could hold twice what it had
//! reserved; and without any allowance (an unmetered prover) the first group's buffers took
//! all the memory the driver reported free, which left none for the other group and for
//! the next proof's a, b, c on an 80 GB card at 2^27 (docs/perf.md, twenty-sixth session).

use super::{GpuProver, MIN_MSM_VRAM};
use crate::error::Result;
use crate::prep::Lengths;
use cuzk_msm::gpu::{Bases, MsmConfig, MsmShape};
use cuzk_msm::{G1, G2};

/// G2's allowance is at most 1 / this of G1's. A proof's one G2 MSM (B₂) splits into its 0/1
/// scalars and a short tail on Filecoin's circuits, so a smaller workspace only chunks a
/// cheap call, while G1's H MSM is dense and runs unchunked only in about 25 GiB at 2^27.
const G2_SHARE: u64 = 4;

/// Device bytes left out of an unmetered proof's room for MSM work: the driver's own
/// allocations and its rounding of each buffer to its granularity.
pub(super) const HEADROOM: u64 = 1 << 30;

/// Device bytes a proof's MSM work buffers may take in all when G1's allowance is `g1`.
pub fn msm_work_bytes(g1: u64) -> u64 {
    g1.saturating_add(g1 / G2_SHARE)
}

/// The largest G1 allowance whose [`msm_work_bytes`] fit in `bytes`.
pub(super) fn g1_allowance_within(bytes: u64) -> u64 {
    // ⌊4·bytes / 5⌋ fits; the rounding down of G2's share leaves room for a few more.
    let mut g = bytes / (G2_SHARE + 1) * G2_SHARE;
    while g < bytes && msm_work_bytes(g + 1) <= bytes {
        g += 1;
    }
    g
}

/// The allowances (G1, G2) of an unmetered proof with `room` device bytes for MSM work,
/// where G1's MSMs ask for `g1_want` and G2's for `g2_want` with memory to spare: each what
/// it asks for when both fit (G1 gets the rest), else G2 at most a fifth of the room.
pub(super) fn split_room(room: u64, g1_want: u64, g2_want: u64) -> (u64, u64) {
    let g2 = if g1_want.saturating_add(g2_want) <= room {
        g2_want
    } else {
        g2_want.min(room / (G2_SHARE + 1))
    };
    // A G2 call finds at least the least useful allowance where the room has it.
    let g2 = g2.max(MIN_MSM_VRAM.min(room / (G2_SHARE + 1)));
    (room - g2, g2)
}

/// A proof's MSM configurations, one per group.
#[derive(Clone, Debug)]
pub(super) struct MsmConfigs {
    /// L, A, B₁ and H.
    pub g1: MsmConfig,
    /// B₂.
    pub g2: MsmConfig,
}

/// The MSM shapes of one proof, as `MsmEngine::reserve` takes them.
pub(super) struct Shapes {
    pub g1: [MsmShape; 4],
    pub g2: MsmShape,
}

impl Shapes {
    /// A proof's MSMs over witness `lengths`: H with its scalars on the device, over `h`'s
    /// shifted copies where it has them; L, A, B₁ and B₂ with theirs from the host when
    /// `host` (else on the device: evaluated there).
    pub(super) fn of(lengths: &Lengths, host: bool, h: Option<&Bases<G1>>) -> Shapes {
        let h = match h {
            Some(h) => MsmShape::over(h, lengths.n, false),
            None => MsmShape::new(lengths.n, false),
        };
        Shapes {
            g1: [
                h,
                MsmShape::new(lengths.aux, host),
                MsmShape::new(lengths.a, host),
                MsmShape::new(lengths.b, host),
            ],
            g2: MsmShape::new(lengths.b, host),
        }
    }
}

impl GpuProver {
    /// The configurations of a proof whose G1 allowance is `vram` under a budget or a
    /// configured figure (G2 gets a quarter of it); without either, those of an unmetered
    /// proof ([`GpuProver::unmetered_configs`]) when `shapes` are given, or no allowance (the
    /// engine's own: what the driver reports free) when they are not (the streamed path,
    /// whose bases pass through chunk buffers and leave the device to the MSMs).
    pub(super) fn msm_configs(
        &self,
        vram: u64,
        shapes: Option<(&Shapes, u64)>,
    ) -> Result<MsmConfigs> {
        let base = *self.msm.config();
        let with = |allowance: Option<u64>| MsmConfig {
            vram_allowance: allowance.map(|a| a as usize),
            ..base
        };
        if self.config.budget.is_some() || self.config.msm_vram.is_some() {
            return Ok(MsmConfigs {
                g1: with(Some(vram)),
                g2: with(Some(vram / G2_SHARE)),
            });
        }
        match shapes {
            Some((shapes, pending)) => self.unmetered_configs(shapes, pending, &with(None)),
            None => Ok(MsmConfigs {
                g1: with(None),
                g2: with(None),
            }),
        }
    }

    /// An unmetered prover owns the device: its MSMs share what the driver reports free now
    /// plus the engine's cached work buffers, less `pending` (the proof's bytes not yet
    /// allocated: a, b, c) and a headroom, each group by what its MSMs ask for
    /// ([`split_room`]). The figures are the same at warm-up and at every proof of a
    /// parameter set, so the buffers warm-up reserves are those the proofs use.
    fn unmetered_configs(
        &self,
        shapes: &Shapes,
        pending: u64,
        base: &MsmConfig,
    ) -> Result<MsmConfigs> {
        let (free, _) = self.device.memory_info()?;
        let room = (free as u64 + self.msm.workspace_bytes() as u64)
            .saturating_sub(pending)
            .saturating_sub(HEADROOM);
        let g1_want = self.msm.wanted_bytes::<G1>(&shapes.g1, base)? as u64;
        let g2_want = self.msm.wanted_bytes::<G2>(&[shapes.g2], base)? as u64;
        let (g1, g2) = split_room(room, g1_want, g2_want);
        tracing::debug!(
            room,
            g1_want,
            g2_want,
            g1,
            g2,
            "MSM allowances of an unmetered proof"
        );
        let with = |a: u64| MsmConfig {
            vram_allowance: Some(a as usize),
            ..*base
        };
        Ok(MsmConfigs {
            g1: with(g1),
            g2: with(g2),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn g1_allowance_within_is_the_largest_that_fits() {
        for bytes in [0, 1, 4, 5, 6, 9, 10, 8 * GIB, 26 * GIB + 3, 139 * GIB + 7] {
            let g = g1_allowance_within(bytes);
            assert!(msm_work_bytes(g) <= bytes, "{bytes}: {g}");
            assert!(msm_work_bytes(g + 1) > bytes, "{bytes}: {g} + 1 fits too");
        }
    }

    #[test]
    fn rooms_split_by_what_each_group_asks_for() {
        // An H200 at 2^27 with 45 GiB of resident queries: both groups get their wish (G1's
        // covering of the L MSM's split plans about 36 GiB, G2's about 13 GiB), G1 the rest.
        let (g1, g2) = split_room(82 * GIB, 36 * GIB, 13 * GIB);
        assert_eq!((g1, g2), (69 * GIB, 13 * GIB));
        // An 80 GB H100: about 21 GiB of room; G2 takes a fifth, G1 the rest, together the
        // room and no more.
        let (g1, g2) = split_room(21 * GIB, 36 * GIB, 13 * GIB);
        assert_eq!(g1 + g2, 21 * GIB);
        assert_eq!(g2, 21 * GIB / 5);
        // A G2 that asks for little keeps its little.
        assert_eq!(split_room(21 * GIB, 30 * GIB, GIB), (20 * GIB, GIB));
        // A G2 with nothing to do still gets the least useful allowance.
        let (g1, g2) = split_room(21 * GIB, 30 * GIB, 0);
        assert_eq!((g1 + g2, g2), (21 * GIB, MIN_MSM_VRAM));
        // No room: nothing to split, no underflow.
        assert_eq!(split_room(0, GIB, GIB), (0, 0));
    }
}
