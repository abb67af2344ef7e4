//! MSMs against bases that stay in page-locked host memory (too many for the VRAM allowance):
//! each call streams them through two device buffers in chunks, each chunk an ordinary MSM of
//! its scalars, and sums the chunks' results on the host.
//!
//! Streams, for chunks j = 0, 1, 2 … (B = bases upload into buffer j mod 2, S = the chunk's
//! scalar pieces when the scalars are on the host, M = its MSM, R = its window sums into
//! pinned slot j mod 2, H = the host combining them):
//!
//! ```text
//! copy:    B0 S0 ── B1 S1 ──────── B2 S2 ──
//! compute:    M0 ──────── R0 M1 ────────── R1 M2 ─── R2
//! host:                        H0               H1   H2
//! ```
//!
//! B(j+1) is queued after S(j), since the copy stream runs in order, and waits on the device
//! for M(j−1), the last reader of its buffer; so it overlaps M(j). The host waits once per
//! chunk, for R(j−1), while M(j) runs.

use super::run::{Profile, ResultSlots};
use super::{check_len, decide_split, lock, resolve, workspace, CallInfo, MsmConfig, MsmEngine};
use super::{Scalars, Source};
use crate::curve::MsmCurve;
use crate::streamed::StreamedPlan;
use crate::MsmError;
use cuzk_cuda::{Device, DeviceBuffer, PinnedBuffer, Stream};
use group::Group;
use std::fmt;

/// Bases kept in page-locked host memory, for MSMs whose bases do not fit the VRAM allowance
/// next to their work buffers ([`MsmEngine::msm_host_bases`]).
pub struct HostBases<C: MsmCurve> {
    points: PinnedBuffer<C::AffineRepr>,
}

impl<C: MsmCurve> HostBases<C> {
    /// Wraps points already in page-locked memory (blst's affine layout, identity all zeros).
    pub fn new(points: PinnedBuffer<C::AffineRepr>) -> Self {
        HostBases { points }
    }

    /// Copies `points` into new page-locked memory of `device`.
    pub fn from_slice(device: &Device, points: &[C::AffineRepr]) -> Result<Self, MsmError> {
        let mut pinned = device.alloc_pinned(points.len())?;
        pinned.as_mut_slice()?.copy_from_slice(points);
        Ok(HostBases { points: pinned })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The page-locked points.
    pub fn points(&self) -> &PinnedBuffer<C::AffineRepr> {
        &self.points
    }

    /// Gives the page-locked points back.
    pub fn into_points(self) -> PinnedBuffer<C::AffineRepr> {
        self.points
    }
}

impl<C: MsmCurve> fmt::Debug for HostBases<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBases")
            .field("group", &C::NAME)
            .field("len", &self.len())
            .finish()
    }
}

/// What one host-bases MSM did: how it cut the bases, and the chunks' MSMs.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamedInfo {
    /// The cut: points per chunk, chunks, device bytes of the base buffers, the chunks' plan.
    pub cut: StreamedPlan,
    /// The chunks' MSMs (one plan for all), phases summed over the chunks when profiling.
    pub call: CallInfo,
}

impl MsmEngine {
    /// `Σ scalars[i]·bases[i]` for bases in host memory, with the engine's configuration (see
    /// [`msm_host_bases_with`](Self::msm_host_bases_with)).
    pub fn msm_host_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &HostBases<C>,
        scalars: Scalars<'_>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_host_bases_with(stream, bases, scalars, &self.config)
            .map(|(p, _)| p)
    }

    /// `Σ scalars[i]·bases[i]` for bases in host memory with `config`: the bases are copied in
    /// chunks ([`StreamedPlan`]) that fit the VRAM allowance together with their MSM's work
    /// buffers, each chunk's upload overlapping the previous chunk's MSM, and the chunks'
    /// results summed. The same result as uploading the bases and calling
    /// [`msm`](Self::msm). Returns once the result is on the host.
    pub fn msm_host_bases_with<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &HostBases<C>,
        scalars: Scalars<'_>,
        config: &MsmConfig,
    ) -> Result<(C::Projective, StreamedInfo), MsmError> {
        let out = self.host_bases::<C>(stream, bases, scalars, config);
        if out.is_err() {
            // Copies from host memory may still be queued: finish them before the borrows
            // end. The first error is the one worth reporting.
            let _ = self.copy.synchronize();
            let _ = stream.synchronize();
        }
        out
    }

    fn host_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &HostBases<C>,
        scalars: Scalars<'_>,
        config: &MsmConfig,
    ) -> Result<(C::Projective, StreamedInfo), MsmError> {
        let n = scalars.len();
        check_len(bases.len(), n)?;
        let source = resolve(scalars, bases.points.device_ordinal())?;
        let (split, tail) = decide_split(&source, n, config.split);
        let mut cache = lock(&self.workspaces);
        let allowance = self.allowance::<C>(&cache, config)?;
        let staged = matches!(source, Source::Host(_));
        let input = self.plan_input::<C>(n, tail, split, staged, config, allowance);
        let cut = StreamedPlan::new(&input, std::mem::size_of::<C::AffineRepr>())?;
        let mut info = StreamedInfo {
            cut,
            call: CallInfo {
                plan: cut.plan,
                split,
                phases: Vec::new(),
            },
        };
        if n == 0 {
            return Ok((C::Projective::identity(), info));
        }
        // Taken once, before any copy from it is queued: the copies below are not tracked by
        // the buffer's event, and the borrow keeps the points unchanged until this call has
        // waited for its last result, which comes after every chunk's MSM read its bases.
        let points = &bases.points.as_slice()?[..n];
        let ws = workspace::<C>(&mut cache, &self.allocations, stream, &cut.plan.sizes, None)?;
        let span = tracing::debug_span!(
            "msm_host_bases",
            group = C::NAME,
            n,
            split,
            chunk = cut.chunk,
            chunks = cut.chunks,
            bits = cut.plan.bits
        );
        let _guard = span.enter();
        // On the copy stream, which writes them first; the compute stream's reads wait for the
        // writes through the buffers' events, and every later upload into a buffer waits for
        // the reads of the chunk before.
        let buffers = if cut.chunks == 1 { 1 } else { 2 };
        let mut device: Vec<DeviceBuffer<C::AffineRepr>> = (0..buffers)
            .map(|_| self.copy.alloc::<C::AffineRepr>(cut.chunk))
            .collect::<Result<_, _>>()?;
        let mut slots = ResultSlots::<C>::new(&self.device, cut.plan.windows as usize + 1)?;
        let upload = |j: usize, device: &mut [DeviceBuffer<C::AffineRepr>]| {
            let r = cut.range(j, n);
            self.copy
                .copy_to_device(&points[r.clone()], &mut device[j % 2].slice_mut(..r.len()))
        };
        upload(0, &mut device)?;
        let mut sum = C::Projective::identity();
        let mut profiles: Vec<Option<Profile>> = Vec::with_capacity(cut.chunks);
        let chunk_info = CallInfo {
            plan: cut.plan,
            split,
            phases: Vec::new(),
        };
        for j in 0..cut.chunks {
            let r = cut.range(j, n);
            let chunk_source = match &source {
                Source::Host(h) => Source::Host(&h[r.clone()]),
                Source::Device(d, at) => Source::Device(d, at + r.start),
            };
            let mut profile = self.profile(config);
            self.run::<C>(
                stream,
                &device[j % 2],
                &chunk_source,
                r.len(),
                &chunk_info,
                ws,
                &mut profile,
            )?;
            profiles.push(profile);
            // Slot j mod 2 was last filled by chunk j − 2, taken in iteration j − 1.
            slots.queue(stream, ws, j % 2, &cut.plan)?;
            if j + 1 < cut.chunks {
                upload(j + 1, &mut device)?;
            }
            if j > 0 {
                sum += slots.take((j - 1) % 2)?;
            }
        }
        sum += slots.take((cut.chunks - 1) % 2)?;
        if config.profile {
            let mut totals: Vec<(&'static str, f64)> = Vec::new();
            for p in profiles.into_iter().flatten() {
                let t = p.totals()?;
                if totals.is_empty() {
                    totals = t;
                } else {
                    for (acc, (_, ms)) in totals.iter_mut().zip(t) {
                        acc.1 += ms;
                    }
                }
            }
            info.call.phases = totals;
        }
        Ok((sum, info))
    }
}
