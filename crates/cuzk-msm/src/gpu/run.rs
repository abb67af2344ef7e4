//! One MSM call on the device, pass by pass and chunk by chunk, with optional phase timing,
//! the host's final combination of the window sums, and the two page-locked slots through which
//! pipelined MSMs hand their window sums to the host.

use super::launch::{self, Count, DigitParams, FirstLevel, Flush, DIGITS_INDEXED};
use super::workspace::{AffineLevels, Workspace};
use super::{CallInfo, MsmEngine, Source};
use crate::curve::MsmCurve;
use crate::digits::window_count;
use crate::plan::{Plan, SPAN_ONES, SPAN_XYZZ};
use crate::MsmError;
use cuzk_cuda::{Device, DeviceBuffer, DeviceView, PinnedBuffer, Stream, Timeline};
use cuzk_field::FrRepr;
use group::Group;

/// Phases of a call, in the order the profile reports them.
const PHASES: [&str; 8] = [
    "upload + prepare",
    "ones batch addition",
    "histogram",
    "scan",
    "scatter",
    "bucket accumulation",
    "bucket sums",
    "window sums",
];

/// Where each phase starts on the compute stream, when profiling: the phases of [`PHASES`]
/// on a [`Timeline`].
pub(super) struct Profile(pub(super) Timeline);

impl Profile {
    fn mark(this: &mut Option<Profile>, stream: &Stream, phase: usize) -> Result<(), MsmError> {
        if let Some(p) = this {
            p.0.begin(stream, PHASES[phase])?;
        }
        Ok(())
    }

    /// Device time per phase, in [`PHASES`] order (a phase lasts until the next mark).
    pub(super) fn totals(&self) -> Result<Vec<(&'static str, f64)>, MsmError> {
        PHASES
            .iter()
            .map(|&name| Ok((name, self.0.total(name)?)))
            .collect()
    }
}

impl MsmEngine {
    /// Queues one MSM on `stream`; its window sums, then the sum of the bases whose scalar is
    /// one, end in `ws.results[..windows + 1]`. The host does not wait.
    #[allow(clippy::too_many_arguments)] // One call's whole context, passed once.
    pub(super) fn run<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &DeviceBuffer<C::AffineRepr>,
        source: &Source<'_>,
        n: usize,
        info: &CallInfo,
        ws: &mut Workspace<C>,
        profile: &mut Option<Profile>,
    ) -> Result<(), MsmError> {
        let mark = |profile: &mut Option<Profile>, phase| Profile::mark(profile, stream, phase);
        let k = &self.kernels;
        let plan = &info.plan;
        let split = info.split;
        // Bucket sets (windows, without shifted copies of the bases).
        let windows = plan.windows as usize;
        let nb = plan.buckets;
        let digit_windows = window_count(plan.bits);
        // With copies, `bases` holds `plan.copies` of them back to back.
        assert!(plan.copies >= 1 && bases.len() % plan.copies as usize == 0);
        let copy_stride = u32::try_from(bases.len() / plan.copies as usize)
            .expect("a table's points are indexed in 31 bits");
        stream.zero(&mut ws.results.slice_mut(..windows + 1))?;
        // Pieces staged so far in this call: which staging buffer the next one takes.
        let mut staged = 0usize;
        for pass in 0..plan.passes() {
            let w_begin = pass * plan.pass_windows;
            let w_count = plan.pass_windows.min(plan.windows - w_begin);
            // The pass's digit windows: `copies` to each of its sets.
            let d_begin = w_begin * plan.copies;
            let d_count = (w_count * plan.copies).min(digit_windows - d_begin);
            let pass_buckets = w_count as usize * nb as usize;
            stream.zero(&mut ws.buckets.slice_mut(..pass_buckets))?;
            for chunk in 0..plan.chunks(n) {
                let lo = chunk * plan.chunk;
                let len = plan.chunk.min(n - lo);
                let p = DigitParams {
                    n: len as u32,
                    base_offset: lo as u32,
                    c: plan.bits,
                    w_begin: d_begin,
                    w_count: d_count,
                    flags: if split { DIGITS_INDEXED } else { 0 },
                    copies: plan.copies,
                    copy_stride,
                };
                mark(profile, 0)?;
                stream.zero(&mut ws.counts)?;
                stream.zero(&mut ws.hist.slice_mut(..pass_buckets))?;
                for piece in 0..len.div_ceil(plan.piece) {
                    let at = lo + piece * plan.piece;
                    let piece_len = plan.piece.min(lo + len - at);
                    let input: DeviceView<'_, FrRepr> = match source {
                        Source::Device(d, first) => d.slice(first + at..first + at + piece_len),
                        Source::Host(h) => {
                            // Staging buffers in turn: the copy of the next piece runs on the
                            // copy stream while this one is converted, and with a chunk's worth
                            // of them the next chunk's copies run under this chunk's sort and
                            // accumulation; buffer events order them.
                            let slot = staged % ws.staging.len();
                            staged += 1;
                            let staging = &mut ws.staging[slot];
                            self.copy.copy_to_device(
                                &h[at..at + piece_len],
                                &mut staging.slice_mut(..piece_len),
                            )?;
                            ws.staging[slot].slice(..piece_len)
                        }
                    };
                    let ones = split && pass == 0;
                    if ones {
                        // The ones of each piece are summed as soon as they are listed.
                        stream.zero(&mut ws.counts.slice_mut(1..2))?;
                    }
                    launch::prepare(
                        stream,
                        k,
                        &input,
                        at as u32,
                        at - lo,
                        split,
                        &mut ws.canon,
                        &mut ws.tail_idx,
                        &mut ws.ones_idx,
                        &mut ws.counts,
                    )?;
                    if ones {
                        mark(profile, 1)?;
                        let mut sum = ws.results.slice_mut(windows..windows + 1);
                        launch::reduce::<C>(
                            stream,
                            k,
                            FirstLevel::Affine {
                                keys: None,
                                key_div: u32::MAX,
                                vals: ws.ones_idx.slice(..),
                                stride: 1,
                                bases,
                            },
                            Count::Device(ws.counts.slice(1..2)),
                            piece_len,
                            SPAN_ONES,
                            &mut ws.parts,
                            &mut sum,
                            Flush::Add,
                        )?;
                        mark(profile, 0)?;
                    }
                    if !split {
                        // Dense: the piece's digits are counted now, while the copy stream
                        // uploads the next piece, instead of after the whole chunk.
                        mark(profile, 2)?;
                        let mut hist = ws.hist.slice_mut(..pass_buckets);
                        launch::histogram(
                            stream,
                            k,
                            &ws.canon,
                            &ws.counts,
                            at - lo..at - lo + piece_len,
                            &p,
                            &mut hist,
                        )?;
                        mark(profile, 0)?;
                    }
                }
                if split {
                    // The tail's length is known on the device only: one count of the chunk.
                    mark(profile, 2)?;
                    let mut hist = ws.hist.slice_mut(..pass_buckets);
                    launch::histogram(stream, k, &ws.canon, &ws.counts, 0..len, &p, &mut hist)?;
                }
                mark(profile, 3)?;
                launch::scan(
                    stream,
                    k,
                    &ws.hist.slice(..pass_buckets),
                    &mut ws.offsets,
                    &mut ws.tiles,
                )?;
                mark(profile, 4)?;
                if plan.bin_windows > 0 {
                    launch::binned_scatter(
                        stream,
                        k,
                        &ws.canon,
                        &ws.tail_idx,
                        &ws.counts,
                        &p,
                        len,
                        (plan.bin_windows, plan.bin_shift),
                        &mut ws.offsets,
                        &mut ws.pairs,
                        &mut ws.bins,
                    )?;
                } else {
                    let mut cursor = ws.offsets.slice_mut(..pass_buckets);
                    launch::scatter(
                        stream,
                        k,
                        &ws.canon,
                        &ws.tail_idx,
                        &ws.counts,
                        &p,
                        &mut cursor,
                        &mut ws.pairs,
                    )?;
                }
                mark(profile, 5)?;
                // A reduction flushes a bucket at most once with a value other than infinity,
                // so into zeroed buckets it stores each run's sum. The pass's buckets were
                // zeroed before its first chunk; a later chunk's go to the second array,
                // zeroed here, and are added into the pass's after (`Sizes::chunk_points`).
                let fresh = chunk > 0 && plan.sizes.chunk_points >= pass_buckets;
                let flush = if chunk == 0 || fresh {
                    Flush::Store
                } else {
                    Flush::Add
                };
                if fresh {
                    stream.zero(&mut ws.chunk_buckets.slice_mut(..pass_buckets))?;
                }
                if plan.affine_levels > 0 {
                    let dims = (w_count, d_count);
                    self.pair_levels::<C>(stream, bases, plan, dims, len, flush, fresh, ws)?;
                } else {
                    let target = if fresh {
                        &mut ws.chunk_buckets
                    } else {
                        &mut ws.buckets
                    };
                    launch::reduce::<C>(
                        stream,
                        k,
                        FirstLevel::Affine {
                            keys: Some(ws.pairs.slice(0..)),
                            key_div: 1,
                            vals: ws.pairs.slice(1..),
                            stride: 2,
                            bases,
                        },
                        Count::Device(ws.offsets.slice(pass_buckets..pass_buckets + 1)),
                        len * d_count as usize,
                        plan.span_affine,
                        &mut ws.parts,
                        &mut target.slice_mut(..pass_buckets),
                        flush,
                    )?;
                }
                if fresh {
                    // Bucket i of the chunk into bucket i of the pass.
                    launch::add_buckets::<C>(
                        stream,
                        k,
                        &ws.chunk_buckets,
                        pass_buckets,
                        &mut ws.buckets,
                    )?;
                }
            }
            mark(profile, 6)?;
            launch::bucket_sums::<C>(
                stream,
                k,
                &ws.buckets,
                w_count,
                nb,
                plan.seg_log,
                &mut ws.segments,
            )?;
            mark(profile, 7)?;
            let segs = nb >> plan.seg_log;
            let m = w_count * segs;
            let mut sums = ws
                .results
                .slice_mut(w_begin as usize..(w_begin + w_count) as usize);
            launch::reduce::<C>(
                stream,
                k,
                FirstLevel::Xyzz {
                    key_div: segs,
                    pts: &ws.segments,
                },
                Count::Host(m),
                m as usize,
                SPAN_XYZZ,
                &mut ws.parts,
                &mut sums,
                Flush::Add,
            )?;
        }
        mark(profile, 7)
    }

    /// The bucket accumulation of one chunk with pair levels: for each group of
    /// `plan.pair_group` windows of the pass, `plan.affine_levels` batch-affine pair levels
    /// over the group's sorted entries (each halving every bucket; the group's buckets are one
    /// key range, so each level is one launch for all its windows), then the segmented
    /// reduction over what they leave. `len`: the chunk's points, the most entries a window can
    /// hold in each of its digit windows; `flush`: whether the reductions store into the
    /// buckets or add to them; `fresh`: into the chunk's buckets instead of the pass's.
    #[allow(clippy::too_many_arguments)] // The chunk's shape and its place in the pass.
    fn pair_levels<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &DeviceBuffer<C::AffineRepr>,
        plan: &Plan,
        (w_count, d_count): (u32, u32),
        len: usize,
        flush: Flush,
        fresh: bool,
        ws: &mut Workspace<C>,
    ) -> Result<(), MsmError> {
        let k = &self.kernels;
        let levels = plan.affine_levels;
        let group = plan.pair_group.max(1);
        let mut w0 = 0;
        while w0 < w_count {
            let g = group.min(w_count - w0) as usize;
            // The group's buckets, its entries at most `len` from each of its digit windows.
            let nb = g * plan.buckets as usize;
            let digits = (g as u32 * plan.copies).min(d_count - w0 * plan.copies);
            let m = len * digits as usize;
            let key_base = u32::try_from(w0 as usize * plan.buckets as usize)
                .expect("a pass's keys fit 32 bits");
            let buckets_of_group = key_base as usize..key_base as usize + nb;
            let AffineLevels {
                keys,
                pts,
                cnt,
                start,
            } = &mut ws.affine;
            for level in 0..levels {
                // Level l writes buffer set l % 2, reading the sort (l = 0) or the other set.
                let dst = (level % 2) as usize;
                let [cnt_0, cnt_1] = cnt;
                let (cnt_dst, cnt_src) = if dst == 0 {
                    (&mut *cnt_0, &*cnt_1)
                } else {
                    (&mut *cnt_1, &*cnt_0)
                };
                let in_cnt = if level == 0 {
                    ws.hist.slice(buckets_of_group.clone())
                } else {
                    cnt_src.slice(..nb)
                };
                launch::halve_counts(stream, k, &in_cnt, cnt_dst)?;
                let [start_0, start_1] = start;
                let (start_dst, start_src) = if dst == 0 {
                    (&mut *start_0, &*start_1)
                } else {
                    (&mut *start_1, &*start_0)
                };
                launch::scan(stream, k, &cnt_dst.slice(..nb), start_dst, &mut ws.tiles)?;
                let [keys_0, keys_1] = keys;
                let keys_dst = if dst == 0 { keys_0 } else { keys_1 };
                let [pts_0, pts_1] = pts;
                let (pts_dst, pts_src) = if dst == 0 {
                    (&mut *pts_0, &*pts_1)
                } else {
                    (&mut *pts_1, &*pts_0)
                };
                let positions = crate::plan::pair_outputs(m, nb, level);
                let slots = crate::plan::pair_outputs(m, nb, level + 1);
                launch::slot_keys(
                    stream,
                    k,
                    &cnt_dst.slice(..nb),
                    start_dst,
                    key_base,
                    slots,
                    keys_dst,
                )?;
                let (input, in_start) = if level == 0 {
                    let input = launch::PairInput::Sorted {
                        pairs: &ws.pairs,
                        bases,
                    };
                    (input, ws.offsets.slice(buckets_of_group.clone()))
                } else {
                    let input = launch::PairInput::Keyed { pts: pts_src };
                    (input, start_src.slice(..nb))
                };
                launch::pair_level::<C>(
                    stream, k, input, &in_cnt, &in_start, key_base, start_dst, keys_dst, pts_dst,
                    positions,
                )?;
            }
            let last = ((levels - 1) % 2) as usize;
            let target = if fresh {
                &mut ws.chunk_buckets
            } else {
                &mut ws.buckets
            };
            let mut buckets = target.slice_mut(..w_count as usize * plan.buckets as usize);
            launch::reduce::<C>(
                stream,
                k,
                FirstLevel::Points {
                    keys: &ws.affine.keys[last],
                    pts: &ws.affine.pts[last],
                },
                Count::Device(ws.affine.start[last].slice(nb..nb + 1)),
                crate::plan::pair_outputs(m, nb, levels),
                plan.span_affine,
                &mut ws.parts,
                &mut buckets,
                flush,
            )?;
            w0 += g as u32;
        }
        Ok(())
    }
}

/// Σ_w 2^(bits·w)·sums[w] for the window (or bucket set) sums, plus the ones' sum stored after
/// them.
pub(super) fn combine<C: MsmCurve>(
    sums: &[C::XyzzRepr],
    bits: u32,
) -> Result<C::Projective, MsmError> {
    let decode = |index: usize| -> Result<C::Projective, MsmError> {
        C::xyzz_from_repr(&sums[index])
            .and_then(|p| C::from_xyzz(&p))
            .map_err(|source| MsmError::NotOnCurve { index, source })
    };
    let windows = sums.len() - 1;
    let mut acc = C::Projective::identity();
    for w in (0..windows).rev() {
        for _ in 0..bits {
            acc = acc.double();
        }
        acc += decode(w)?;
    }
    Ok(acc + decode(windows)?)
}

/// Two page-locked copies of the window sums for pipelined MSMs: the host combines one MSM's
/// while the device computes the next, and neither the host nor the device waits for the
/// other except when the host takes a result.
pub(super) struct ResultSlots<C: MsmCurve> {
    slots: [PinnedBuffer<C::XyzzRepr>; 2],
    /// Bits between bucket sets, and their count, of the MSM last queued into each slot.
    shape: [(u32, usize); 2],
}

impl<C: MsmCurve> ResultSlots<C> {
    /// Slots of `len` points each: at least the most windows of any plan, plus one.
    pub(super) fn new(device: &Device, len: usize) -> Result<Self, MsmError> {
        Ok(ResultSlots {
            slots: [device.alloc_pinned(len)?, device.alloc_pinned(len)?],
            shape: [(0, 0); 2],
        })
    }

    /// Queues on `stream`, after the MSM just queued there, the copy of its window sums into
    /// `slot`. The workspace must hold at least the slots' length of results (plans' sizes are
    /// raised to it), and the slot's previous result must have been taken.
    pub(super) fn queue(
        &mut self,
        stream: &Stream,
        ws: &Workspace<C>,
        slot: usize,
        plan: &Plan,
    ) -> Result<(), MsmError> {
        let len = self.slots[slot].len();
        // The pinned buffer's event orders this copy after its previous ones; the results
        // buffer's own events order it after the MSM's writes and before the next MSM's zeroing.
        stream.copy_to_pinned(&ws.results.slice(..len), &mut self.slots[slot])?;
        self.shape[slot] = (plan.set_bits(), plan.windows as usize);
        Ok(())
    }

    /// Waits for the copy queued into `slot` (and nothing queued after it) and combines it.
    pub(super) fn take(&self, slot: usize) -> Result<C::Projective, MsmError> {
        let (bits, windows) = self.shape[slot];
        let sums = self.slots[slot].as_slice()?;
        combine::<C>(&sums[..windows + 1], bits)
    }
}
