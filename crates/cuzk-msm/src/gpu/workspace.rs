//! The device buffers one MSM works in, sized by a plan and kept by the engine between calls,
//! so that steady-state calls allocate nothing (large allocations cost milliseconds).

use super::launch::{BinBuffers, Partials};
use crate::curve::MsmCurve;
use crate::plan::{staging_slot, Sizes};
use crate::MsmError;
use cuzk_cuda::{DeviceBuffer, Stream};
use cuzk_field::FrRepr;

/// Work buffers for MSMs in group `C`, at least as large as `sizes`.
#[derive(Debug)]
pub(super) struct Workspace<C: MsmCurve> {
    pub sizes: Sizes,
    /// Staging buffers of [`staging_slot`] scalars for host scalars, used in turn: two, or
    /// a chunk's pieces where the next chunk's upload overlaps this one's work.
    pub staging: Vec<DeviceBuffer<FrRepr>>,
    pub canon: DeviceBuffer<FrRepr>,
    pub tail_idx: DeviceBuffer<u32>,
    pub ones_idx: DeviceBuffer<u32>,
    /// Tail and ones counts of the chunk (prepare's output).
    pub counts: DeviceBuffer<u32>,
    pub hist: DeviceBuffer<u32>,
    /// The histogram's exclusive scan, then the scatter's cursors; the last element holds the
    /// number of pairs.
    pub offsets: DeviceBuffer<u32>,
    pub tiles: DeviceBuffer<u32>,
    /// Sorted (bucket, point) pairs, interleaved.
    pub pairs: DeviceBuffer<u32>,
    pub parts: Partials<C>,
    pub buckets: DeviceBuffer<C::XyzzRepr>,
    /// A later chunk's buckets, stored into zeroed and then added into `buckets`.
    pub chunk_buckets: DeviceBuffer<C::XyzzRepr>,
    pub segments: DeviceBuffer<C::XyzzRepr>,
    /// Window sums of every window, then the sum of the bases whose scalar is one.
    pub results: DeviceBuffer<C::XyzzRepr>,
    /// The batch-affine pair levels' buffers.
    pub affine: AffineLevels<C>,
    /// The binned scatter's buffers.
    pub bins: BinBuffers,
}

/// What the pair levels of one window write, alternately in the first and the second of each
/// pair of buffers: keys and affine points, the window's bucket counts, and their exclusive
/// scans (one longer: the total ends each).
#[derive(Debug)]
pub(super) struct AffineLevels<C: MsmCurve> {
    pub keys: [DeviceBuffer<u32>; 2],
    pub pts: [DeviceBuffer<C::AffineRepr>; 2],
    pub cnt: [DeviceBuffer<u32>; 2],
    pub start: [DeviceBuffer<u32>; 2],
}

/// An allocation of at least one element: launches need a valid pointer even when unused.
fn alloc<T: bytemuck::Pod>(stream: &Stream, len: usize) -> Result<DeviceBuffer<T>, MsmError> {
    Ok(stream.alloc::<T>(len.max(1))?)
}

impl<C: MsmCurve> Workspace<C> {
    pub fn new(stream: &Stream, sizes: Sizes) -> Result<Self, MsmError> {
        let slot = staging_slot(sizes.staging);
        let slots = sizes.staging.checked_div(slot).unwrap_or(2);
        let staging = (0..slots)
            .map(|_| alloc(stream, slot))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Workspace {
            sizes,
            staging,
            canon: alloc(stream, sizes.canon)?,
            tail_idx: alloc(stream, sizes.index)?,
            ones_idx: alloc(stream, sizes.index)?,
            counts: alloc(stream, 2)?,
            hist: alloc(stream, sizes.hist)?,
            offsets: alloc(stream, sizes.hist + 1)?,
            tiles: alloc(stream, sizes.tiles)?,
            pairs: alloc(stream, 2 * sizes.pairs)?,
            parts: Partials {
                keys: [
                    alloc(stream, sizes.partial_a)?,
                    alloc(stream, sizes.partial_b)?,
                ],
                pts: [
                    alloc(stream, sizes.partial_a)?,
                    alloc(stream, sizes.partial_b)?,
                ],
                m: [alloc(stream, 1)?, alloc(stream, 1)?],
                dummy: alloc(stream, 1)?,
            },
            buckets: alloc(stream, sizes.bucket_points)?,
            chunk_buckets: alloc(stream, sizes.chunk_points)?,
            segments: alloc(stream, sizes.segment_points)?,
            results: alloc(stream, sizes.result_points)?,
            bins: BinBuffers {
                tmp: alloc(stream, 2 * sizes.bin_pairs)?,
                cursors: alloc(stream, sizes.bin_cursors)?,
            },
            affine: AffineLevels {
                keys: [
                    alloc(stream, sizes.affine_a)?,
                    alloc(stream, sizes.affine_b)?,
                ],
                pts: [
                    alloc(stream, sizes.affine_a)?,
                    alloc(stream, sizes.affine_b)?,
                ],
                cnt: [
                    alloc(stream, sizes.window_buckets)?,
                    alloc(stream, sizes.window_buckets)?,
                ],
                start: [
                    alloc(stream, sizes.window_buckets + 1)?,
                    alloc(stream, sizes.window_buckets + 1)?,
                ],
            },
        })
    }
}
