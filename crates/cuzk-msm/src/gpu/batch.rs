//! Several MSMs against the same resident bases, pipelined: the next host scalar set is copied
//! on the copy stream while the current one computes, and each set's window sums reach the
//! host through one of two page-locked slots, combined while the next set computes.
//!
//! Streams, for host sets k = 0, 1, 2 … (S = scalar upload into device buffer k mod 2, M = the
//! MSM, R = its window sums into pinned slot k mod 2, H = the host combining them):
//!
//! ```text
//! copy:    S0 ─ S1 ───────── S2 ───────── S3
//! compute:      M0 R0 ─────── M1 R1 ─────── M2 R2 ─── M3 R3
//! host:                 (queue M1) H0       (queue M2) H1 … H3
//! ```
//!
//! S(k+1) waits (device-side, through the buffer's read event) for M(k−1), the last reader of
//! its buffer, so it overlaps M(k). When two device scalar buffers do not fit the allowance
//! next to the work buffers ([`BatchPlan`]), host sets run the single-call staged path instead: their pieces
//! take the workspace's staging buffers in turn (two, planned without the upload overlap,
//! unless a larger plan of the same group left more), so only the first of set k+1's pieces
//! that have a free buffer overlap M(k). The host waits once per set, for R(k−1), while M(k) runs.

use super::run::{Profile, ResultSlots};
use super::{check_len, decide_split, lock, resolve, workspace, Bases, CallInfo, Source};
use super::{MsmConfig, MsmEngine, Scalars};
use crate::batch::{BatchPlan, BatchSet, SET_BUFFERS};
use crate::curve::MsmCurve;
use crate::MsmError;
use cuzk_cuda::{DeviceBuffer, Stream};
use cuzk_field::FrRepr;
use group::Group;

/// One set of the batch, resolved and planned.
struct Set<'a> {
    source: Source<'a>,
    n: usize,
    info: CallInfo,
    /// Device scalar buffer it is prefetched into (host sets, prefetching only).
    buffer: Option<usize>,
}

impl MsmEngine {
    /// `Σ sets[k][i]·bases[i]` for every set k, with the engine's configuration: the same
    /// results as [`msm`](Self::msm) per set, pipelined (see [`msm_batch_with`](Self::msm_batch_with)).
    pub fn msm_batch<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &Bases<C>,
        sets: &[Scalars<'_>],
    ) -> Result<Vec<C::Projective>, MsmError> {
        self.msm_batch_with(stream, bases, sets, &self.config)
            .map(|(p, _)| p)
    }

    /// `Σ sets[k][i]·bases[i]` for every set k with `config`, and what each set's MSM did.
    ///
    /// The scalars of each host set are copied into a device buffer on the engine's copy
    /// stream while the previous set computes (two such buffers, of the largest host set, come
    /// out of the allowance; when they do not fit, host sets are staged in pieces as by
    /// [`msm_with`](Self::msm_with)). Each set's window sums are copied into one of two
    /// page-locked slots and combined on the host while the next set computes. Returns once
    /// every result is on the host; the scalars may be reused then.
    pub fn msm_batch_with<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &Bases<C>,
        sets: &[Scalars<'_>],
        config: &MsmConfig,
    ) -> Result<(Vec<C::Projective>, Vec<CallInfo>), MsmError> {
        let out = self.batch::<C>(stream, bases, sets, config);
        if out.is_err() {
            // Copies from the caller's host memory may still be queued: finish them before the
            // borrow ends. The first error is the one worth reporting.
            let _ = self.copy.synchronize();
            let _ = stream.synchronize();
        }
        out
    }

    fn batch<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &Bases<C>,
        sets: &[Scalars<'_>],
        config: &MsmConfig,
    ) -> Result<(Vec<C::Projective>, Vec<CallInfo>), MsmError> {
        let mut resolved = Vec::with_capacity(sets.len());
        for s in sets {
            check_len(bases.len(), s.len())?;
            resolved.push(resolve(s.clone(), bases.points.device_ordinal())?);
        }
        let mut cache = lock(&self.workspaces);
        let allowance = self.allowance::<C>(&cache, config)?;
        let shapes: Vec<BatchSet> = resolved
            .iter()
            .zip(sets)
            .map(|(source, s)| {
                let n = s.len();
                let (split, tail) = decide_split(source, n, config.split);
                BatchSet {
                    n,
                    tail,
                    split,
                    host: matches!(source, Source::Host(_)),
                }
            })
            .collect();
        let base = bases.plan_input(self.plan_input::<C>(0, 0, false, false, config, allowance));
        let batch = BatchPlan::new(&shapes, &base)?;
        let mut host_index = 0;
        let mut sets: Vec<Set<'_>> = resolved
            .into_iter()
            .zip(&shapes)
            .zip(&batch.plans)
            .map(|((source, shape), plan)| {
                // Host sets alternate between the set buffers, in order.
                let buffer = (batch.prefetch_len > 0 && shape.host && shape.n > 0).then(|| {
                    host_index += 1;
                    (host_index - 1) % SET_BUFFERS
                });
                Set {
                    source,
                    n: shape.n,
                    info: CallInfo {
                        plan: *plan,
                        split: shape.split,
                        phases: Vec::new(),
                    },
                    buffer,
                }
            })
            .collect();
        let mut results = vec![C::Projective::identity(); sets.len()];
        let live: Vec<usize> = (0..sets.len()).filter(|&k| sets[k].n > 0).collect();
        if live.is_empty() {
            return Ok((results, sets.into_iter().map(|s| s.info).collect()));
        }
        let slot_len = batch.result_points();
        let shared = batch.shared;
        let all = batch.sizes;
        let mut slots = ResultSlots::<C>::new(&self.device, slot_len)?;
        // Allocated on the copy stream, which writes them first; the compute stream's reads
        // wait for those writes through the buffers' events, and freeing them (on the copy
        // stream) waits for the reads.
        let mut device_sets: Vec<DeviceBuffer<FrRepr>> = (0..batch.buffers)
            .map(|_| self.copy.alloc::<FrRepr>(batch.prefetch_len))
            .collect::<Result<_, _>>()?;
        let span = tracing::debug_span!(
            "msm_batch",
            group = C::NAME,
            sets = sets.len(),
            prefetch = !device_sets.is_empty(),
            shared
        );
        let _guard = span.enter();
        let hosts: Vec<usize> = live
            .iter()
            .copied()
            .filter(|&k| sets[k].buffer.is_some())
            .collect();
        if let Some(&first) = hosts.first() {
            self.prefetch(&sets[first], &mut device_sets)?;
        }
        let mut profiles: Vec<Option<Profile>> = Vec::with_capacity(live.len());
        // The set whose window sums are on their way to the host, and its slot.
        let mut pending: Option<(usize, usize)> = None;
        for (j, &k) in live.iter().enumerate() {
            let slot = j % 2;
            let set = &sets[k];
            let source = match (&set.source, set.buffer) {
                (Source::Host(_), Some(b)) => Source::Device(&device_sets[b], 0),
                (Source::Host(h), None) => Source::Host(h),
                (Source::Device(d, at), _) => Source::Device(d, *at),
            };
            let mut sizes = if shared { all } else { set.info.plan.sizes };
            sizes.result_points = sizes.result_points.max(slot_len);
            let ws = workspace::<C>(&mut cache, &self.allocations, stream, &sizes, None)?;
            let mut profile = self.profile(config);
            self.run::<C>(
                stream,
                &bases.points,
                &source,
                set.n,
                &set.info,
                ws,
                &mut profile,
            )?;
            profiles.push(profile);
            // Slot j mod 2 was last filled by live set j − 2, taken in iteration j − 1.
            slots.queue(stream, ws, slot, &set.info.plan)?;
            // Queued after this set's staging copies (if any) so that the copy stream, which
            // runs in order, does not hold them back behind the next set's upload.
            if let Some(h) = hosts.iter().position(|&i| i == k) {
                if let Some(&next) = hosts.get(h + 1) {
                    self.prefetch(&sets[next], &mut device_sets)?;
                }
            }
            // The previous set's sums are on the host once this set's MSM starts: combining
            // them here overlaps this set's MSM.
            if let Some((prev, prev_slot)) = pending.replace((k, slot)) {
                results[prev] = slots.take(prev_slot)?;
            }
        }
        if let Some((prev, prev_slot)) = pending {
            results[prev] = slots.take(prev_slot)?;
        }
        for (&k, profile) in live.iter().zip(profiles) {
            if let Some(p) = profile {
                sets[k].info.phases = p.totals()?;
            }
        }
        Ok((results, sets.into_iter().map(|s| s.info).collect()))
    }

    /// Queues the copy of a host set's scalars into its device buffer on the copy stream. The
    /// copy waits (on the device) for the last MSM that read that buffer.
    fn prefetch(
        &self,
        set: &Set<'_>,
        buffers: &mut [DeviceBuffer<FrRepr>],
    ) -> Result<(), MsmError> {
        if let (Source::Host(h), Some(b)) = (&set.source, set.buffer) {
            self.copy
                .copy_to_device(h, &mut buffers[b].slice_mut(..h.len()))?;
        }
        Ok(())
    }
}
