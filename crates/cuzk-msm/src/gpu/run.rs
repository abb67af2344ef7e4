//! One MSM call on the device, pass by pass and chunk by chunk, with optional phase timing,
//! the host's final combination of the window sums, and the two page-locked slots through which
//! pipelined MSMs hand their window sums to the host.

use super::launch::{self, Count, DigitParams, FirstLevel, DIGITS_INDEXED};
use super::workspace::Workspace;
use super::{CallInfo, MsmEngine, Source};
use crate::curve::MsmCurve;
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
        let windows = plan.windows as usize;
        let nb = plan.buckets;
        stream.zero(&mut ws.results.slice_mut(..windows + 1))?;
        for pass in 0..plan.passes() {
            let w_begin = pass * plan.pass_windows;
            let w_count = plan.pass_windows.min(plan.windows - w_begin);
            let pass_buckets = w_count as usize * nb as usize;
            stream.zero(&mut ws.buckets.slice_mut(..pass_buckets))?;
            for chunk in 0..plan.chunks(n) {
                let lo = chunk * plan.chunk;
                let len = plan.chunk.min(n - lo);
                let p = DigitParams {
                    n: len as u32,
                    base_offset: lo as u32,
                    c: plan.bits,
                    w_begin,
                    w_count,
                    flags: if split { DIGITS_INDEXED } else { 0 },
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
                            // Alternate staging buffers: the copy of the next piece runs on the
                            // copy stream while this one is converted; buffer events order them.
                            let staging = &mut ws.staging[piece % 2];
                            self.copy.copy_to_device(
                                &h[at..at + piece_len],
                                &mut staging.slice_mut(..piece_len),
                            )?;
                            ws.staging[piece % 2].slice(..piece_len)
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
                mark(profile, 5)?;
                let mut buckets = ws.buckets.slice_mut(..pass_buckets);
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
                    len * w_count as usize,
                    plan.span_affine,
                    &mut ws.parts,
                    &mut buckets,
                )?;
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
            )?;
        }
        mark(profile, 7)
    }
}

/// Σ_w 2^(bits·w)·sums[w] for the window sums, plus the ones' sum stored after them.
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
    /// Window width and window count of the MSM last queued into each slot.
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
        self.shape[slot] = (plan.bits, plan.windows as usize);
        Ok(())
    }

    /// Waits for the copy queued into `slot` (and nothing queued after it) and combines it.
    pub(super) fn take(&self, slot: usize) -> Result<C::Projective, MsmError> {
        let (bits, windows) = self.shape[slot];
        let sums = self.slots[slot].as_slice()?;
        combine::<C>(&sums[..windows + 1], bits)
    }
}
