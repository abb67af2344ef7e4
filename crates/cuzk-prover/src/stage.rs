//! Host-to-device copies through pinned staging buffers: query points converted from blst's
//! affine structs to the kernels' layout, and Fr vectors, in chunks that alternate between
//! two page-locked buffers so the conversion of one chunk overlaps the copy of the last.

use crate::error::Result;
use blst::{blst_p1_affine, blst_p2_affine};
use bytemuck::Pod;
use cuzk_cuda::{Device, DeviceBuffer, Event, PinnedBuffer, Stream};
use cuzk_field::{Fp2Repr, FpRepr, G1AffineRepr, G2AffineRepr};
use cuzk_msm::{MsmCurve, G1, G2};
use rayon::prelude::*;

/// Bytes per staging buffer: large enough that a copy runs at full PCIe speed, small
/// enough that two of them stay cheap to keep pinned.
pub(crate) const STAGE_BYTES: usize = 64 << 20;

/// A host point type whose layout the kernels read after a cheap per-element conversion.
pub(crate) trait HostPoint: Copy + Send + Sync {
    /// The group the point belongs to.
    type Curve: MsmCurve;
    /// The point in the kernels' layout (the same Montgomery limbs).
    fn repr(&self) -> <Self::Curve as MsmCurve>::AffineRepr;
}

fn fp(f: &blst::blst_fp) -> FpRepr {
    FpRepr { limbs: f.l }
}

impl HostPoint for blst_p1_affine {
    type Curve = G1;
    fn repr(&self) -> G1AffineRepr {
        G1AffineRepr {
            x: fp(&self.x),
            y: fp(&self.y),
        }
    }
}

impl HostPoint for blst_p2_affine {
    type Curve = G2;
    fn repr(&self) -> G2AffineRepr {
        let fp2 = |f: &blst::blst_fp2| Fp2Repr {
            c0: fp(&f.fp[0]),
            c1: fp(&f.fp[1]),
        };
        G2AffineRepr {
            x: fp2(&self.x),
            y: fp2(&self.y),
        }
    }
}

/// Two pinned buffers of `chunk` elements of `T` and the events that say when each is free.
pub(crate) struct Stager<T: Pod> {
    bufs: [PinnedBuffer<T>; 2],
    done: [Event; 2],
    chunk: usize,
}

impl<T: Pod + Send + Sync> Stager<T> {
    /// Staging buffers of [`STAGE_BYTES`] each on `device`.
    pub(crate) fn new(device: &Device) -> Result<Self> {
        let chunk = (STAGE_BYTES / std::mem::size_of::<T>()).max(1);
        Ok(Stager {
            bufs: [device.alloc_pinned(chunk)?, device.alloc_pinned(chunk)?],
            done: [device.new_event()?, device.new_event()?],
            chunk,
        })
    }

    /// Queues `dst[i] = convert(src[i])` on `stream` (`dst` may be longer). Returns once every
    /// chunk is queued; the staging buffers are reused only after their previous copy
    /// finished, and [`Stager::finish`] waits for the last ones.
    pub(crate) fn copy<S: Sync>(
        &mut self,
        stream: &Stream,
        src: &[S],
        dst: &mut DeviceBuffer<T>,
        convert: impl Fn(&S) -> T + Sync,
    ) -> Result<()> {
        debug_assert!(src.len() <= dst.len());
        for (k, part) in src.chunks(self.chunk).enumerate() {
            let slot = k % 2;
            // The copy queued from this buffer two chunks ago must be done before refilling.
            self.done[slot].synchronize()?;
            let staged = &mut self.bufs[slot].as_mut_slice()?[..part.len()];
            staged
                .par_iter_mut()
                .zip(part.par_iter())
                .with_min_len(4096)
                .for_each(|(d, s)| *d = convert(s));
            let start = k * self.chunk;
            let mut view = dst.slice_mut(start..start + part.len());
            stream.copy_to_device(&self.bufs[slot].as_slice()?[..part.len()], &mut view)?;
            stream.record(&self.done[slot])?;
        }
        Ok(())
    }

    /// Waits until both staging buffers are free (their copies done).
    pub(crate) fn finish(&self) -> Result<()> {
        for e in &self.done {
            e.synchronize()?;
        }
        Ok(())
    }
}
