//! Parameter generation on a CUDA device: the scalars on the CPU (the generator's
//! `GeneratorScalars`, so the result equals the CPU generator's for the same toxic waste), every
//! query point a fixed-base multiple of a generator made on the GPU
//! (`cuzk_msm::gpu::FixedBaseEngine`), then copied back and converted to host points.
//!
//! Query by query, pipelined: while the device multiplies one query, the host stages the next
//! query's scalars and converts the previous query's points. Uploads and downloads run on
//! their own streams through double-buffered pinned memory, so at most two queries' scalars
//! and points are on the device at once (all points, when they are kept there for a prover).
//! Every query is spot-checked against multiplications on the host.

use crate::error::{ms, Error, Result};
use blst::blst_fp;
use cuzk_cuda::{Device, DeviceBuffer, Event, PinnedBuffer, Stream};
use cuzk_field::{
    Curve, Fp, Fp2, FpRepr, FrRepr, G1Affine, G1AffineRepr, G2Affine, G2AffineRepr,
    PrimeCurveAffine, Scalar,
};
use cuzk_groth16::parts::GeneratorScalars;
use cuzk_groth16::{Parameters, ParamgenTimings, Section, ToxicWaste};
use cuzk_msm::gpu::{Bases, FixedBaseEngine, FixedBaseTable};
use cuzk_msm::{MsmCurve, G1, G2};
use cuzk_synth::Pce;
use rand_core::RngCore;
use rayon::prelude::*;
use std::fmt;
use std::time::{Duration, Instant};

/// Scalars per pinned upload buffer (64 MiB).
const STAGE_SCALARS: usize = 1 << 21;
/// Bytes per pinned download buffer: 2^21 G1 or 2^20 G2 points.
const STAGE_BYTES: usize = 192 << 20;
/// Points of every query compared with a host multiplication.
const SPOT_CHECKS: usize = 8;

/// How [`generate_parameters_gpu_config`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuParamgenConfig {
    /// Window width of the G1 generator's table (default
    /// `cuzk_msm::gpu::default_fixed_bits::<G1>()`, 14 bits).
    pub g1_window_bits: Option<u32>,
    /// Window width of the G2 generator's table (default 13 bits).
    pub g2_window_bits: Option<u32>,
    /// Points per GPU thread, which share one field inversion (1..=16, default 16).
    pub points_per_thread: Option<u32>,
    /// Also keep the query points on the device ([`GpuGenerated::on_device`]), for a prover
    /// that starts right away: it saves uploading them again.
    pub keep_on_device: bool,
}

/// The query points left on the device by [`GpuParamgenConfig::keep_on_device`], in blst's
/// affine layout: the same points as the host [`Parameters`]' queries.
#[derive(Debug)]
pub struct DeviceQueries {
    /// H, padded with one identity point to the domain size (`n − 1` points, then the
    /// identity), as the GPU prover keeps it resident: one base per domain point.
    pub h: Bases<G1>,
    /// L.
    pub l: Bases<G1>,
    /// A.
    pub a: Bases<G1>,
    /// B in G1.
    pub b_g1: Bases<G1>,
    /// B in G2.
    pub b_g2: Bases<G2>,
}

/// What [`generate_parameters_gpu_config`] made.
pub struct GpuGenerated {
    /// The parameters, on the host.
    pub params: Parameters,
    /// The query points still on the device, when asked for.
    pub on_device: Option<DeviceQueries>,
    /// Where the time went.
    pub timings: ParamgenTimings,
}

impl fmt::Debug for GpuGenerated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The queries can hold hundreds of millions of points: show their sizes only.
        f.debug_struct("GpuGenerated")
            .field("h", &self.params.h.len())
            .field("l", &self.params.l.len())
            .field("a", &self.params.a.len())
            .field("b_g1", &self.params.b_g1.len())
            .field("b_g2", &self.params.b_g2.len())
            .field("on_device", &self.on_device.is_some())
            .field("timings", &self.timings)
            .finish()
    }
}

/// Generates parameters for the PCE's circuit from the given toxic waste with the query points
/// multiplied on `device`: the same parameters as `generate_parameters_with` gives.
pub fn generate_parameters_gpu(
    device: &Device,
    pce: &Pce,
    toxic: &ToxicWaste,
) -> Result<Parameters> {
    generate_parameters_gpu_config(device, pce, toxic, &GpuParamgenConfig::default())
        .map(|g| g.params)
}

/// [`generate_parameters_gpu`] from fresh random toxic waste.
pub fn generate_parameters_gpu_random<R: RngCore>(
    device: &Device,
    pce: &Pce,
    rng: &mut R,
) -> Result<Parameters> {
    generate_parameters_gpu(device, pce, &ToxicWaste::random(rng))
}

/// [`generate_parameters_gpu`] with `config`, also returning where the time went and, when
/// asked for, the query points still on the device.
pub fn generate_parameters_gpu_config(
    device: &Device,
    pce: &Pce,
    toxic: &ToxicWaste,
    config: &GpuParamgenConfig,
) -> Result<GpuGenerated> {
    let start = Instant::now();
    let span = tracing::info_span!(
        "paramgen_gpu",
        device = device.ordinal(),
        rows = pce.num_rows()
    );
    let _guard = span.enter();
    let mut engine = FixedBaseEngine::new(device)?;
    if let Some(per) = config.points_per_thread {
        engine = engine.with_points_per_thread(per)?;
    }

    let scalars = GeneratorScalars::compute(pce, toxic)?;
    let mut timings = ParamgenTimings {
        scalars: start.elapsed(),
        scalar_phases: scalars.phases.clone(),
        ..ParamgenTimings::default()
    };
    tracing::info!(
        ms = ms(timings.scalars),
        h = scalars.h.len(),
        l = scalars.l.len(),
        a = scalars.a.len(),
        b = scalars.b.len(),
        "parameter scalars computed on the CPU"
    );

    let t = Instant::now();
    let compute = device.new_stream()?;
    let g1_table = engine.table::<G1>(&compute, &G1Affine::generator(), config.g1_window_bits)?;
    let g2_table = engine.table::<G2>(&compute, &G2Affine::generator(), config.g2_window_bits)?;
    let mut gpu = Gpu {
        device: device.clone(),
        up: device.new_stream()?,
        down: device.new_stream()?,
        compute,
        engine,
        scalar_stage: Vec::new(),
        g1_stage: Vec::new(),
        g2_stage: Vec::new(),
        keep: config.keep_on_device,
        upload: Duration::ZERO,
        download: Duration::ZERO,
        device_ms: 0.0,
    };
    // Staging buffers sized to the largest query of their kind, at most one chunk each.
    let s = &scalars;
    let largest = [s.h.len(), s.ic.len(), s.l.len(), s.a.len(), s.b.len()]
        .into_iter()
        .max()
        .unwrap_or(0);
    gpu.scalar_stage = staging(device, largest.min(STAGE_SCALARS))?;
    gpu.g1_stage = staging(device, largest.min(stage_points::<G1>()))?;
    gpu.g2_stage = staging(device, s.b.len().min(stage_points::<G2>()))?;
    gpu.compute.synchronize()?;
    timings.tables = t.elapsed();
    tracing::info!(
        ms = ms(timings.tables),
        g1_bits = g1_table.bits(),
        g2_bits = g2_table.bits(),
        "generator tables and staging buffers ready"
    );

    // The H query is padded to the domain size only where it stays on the device.
    let h_pad = usize::from(config.keep_on_device);
    let pipeline_start = Instant::now();
    // One query ahead: the device multiplies the next query while the host takes the last
    // one's points. IC (a handful of points) goes last.
    let h = gpu.start(&g1_table, Section::H, &s.h, h_pad)?;
    let l = gpu.start(&g1_table, Section::L, &s.l, 0)?;
    let (h_points, h_dev) = gpu.finish(h, &s.h)?;
    let a = gpu.start(&g1_table, Section::A, &s.a, 0)?;
    let (l_points, l_dev) = gpu.finish(l, &s.l)?;
    let b_g1 = gpu.start(&g1_table, Section::BG1, &s.b, 0)?;
    let (a_points, a_dev) = gpu.finish(a, &s.a)?;
    let b_g2 = gpu.start(&g2_table, Section::BG2, &s.b, 0)?;
    let (b_g1_points, b_g1_dev) = gpu.finish(b_g1, &s.b)?;
    let ic = gpu.start(&g1_table, Section::Ic, &s.ic, 0)?;
    let (b_g2_points, b_g2_dev) = gpu.finish(b_g2, &s.b)?;
    let (ic_points, _) = gpu.finish(ic, &s.ic)?;
    let pipeline = pipeline_start.elapsed();

    timings.multiply = Duration::from_secs_f64(gpu.device_ms / 1e3);
    timings.upload = gpu.upload;
    timings.download = gpu.download;
    let params = Parameters {
        vk: scalars.verifying_key(ic_points),
        h: h_points,
        l: l_points,
        a: a_points,
        b_g1: b_g1_points,
        b_g2: b_g2_points,
    };
    let on_device = match (h_dev, l_dev, a_dev, b_g1_dev, b_g2_dev) {
        (Some(h), Some(l), Some(a), Some(b_g1), Some(b_g2)) => Some(DeviceQueries {
            h,
            l,
            a,
            b_g1,
            b_g2,
        }),
        _ => None,
    };
    timings.total = start.elapsed();
    tracing::info!(
        scalars_ms = ms(timings.scalars),
        tables_ms = ms(timings.tables),
        pipeline_ms = ms(pipeline),
        upload_ms = ms(timings.upload),
        device_multiply_ms = ms(timings.multiply),
        download_ms = ms(timings.download),
        total_ms = ms(timings.total),
        "generated parameters on the GPU"
    );
    Ok(GpuGenerated {
        params,
        on_device,
        timings,
    })
}

/// Two page-locked buffers of `len` elements (at least one, as the driver wants).
fn staging<T: bytemuck::Pod>(device: &Device, len: usize) -> Result<Vec<PinnedBuffer<T>>> {
    (0..2)
        .map(|_| Ok(device.alloc_pinned::<T>(len.max(1))?))
        .collect()
}

/// Points per download buffer of a group.
fn stage_points<C: MsmCurve>() -> usize {
    STAGE_BYTES / std::mem::size_of::<C::AffineRepr>()
}

/// A group's host side: its staging buffers and its conversion to host points.
trait HostCurve: MsmCurve {
    /// The group's download buffers.
    fn stage(gpu: &mut Gpu) -> &mut Vec<PinnedBuffer<Self::AffineRepr>>;
    /// The host point with the same coordinates (the kernels write reduced Montgomery
    /// coordinates, and all zeros for the identity, exactly as blst stores points).
    fn to_host(r: &Self::AffineRepr) -> Self::Affine;
}

fn fp(r: &FpRepr) -> Fp {
    Fp::from(blst_fp { l: r.limbs })
}

impl HostCurve for G1 {
    fn stage(gpu: &mut Gpu) -> &mut Vec<PinnedBuffer<G1AffineRepr>> {
        &mut gpu.g1_stage
    }
    fn to_host(r: &G1AffineRepr) -> G1Affine {
        G1Affine::from_raw_unchecked(fp(&r.x), fp(&r.y), false)
    }
}

impl HostCurve for G2 {
    fn stage(gpu: &mut Gpu) -> &mut Vec<PinnedBuffer<G2AffineRepr>> {
        &mut gpu.g2_stage
    }
    fn to_host(r: &G2AffineRepr) -> G2Affine {
        let fp2 = |c0, c1| Fp2::new(fp(c0), fp(c1));
        G2Affine::from_raw_unchecked(fp2(&r.x.c0, &r.x.c1), fp2(&r.y.c0, &r.y.c1), false)
    }
}

/// A query's points on the host, and on the device when kept there.
type Finished<C> = (Vec<<C as MsmCurve>::Affine>, Option<Bases<C>>);

/// One query on its way through the device.
struct Pending<C: MsmCurve> {
    section: Section,
    /// Points of the query (the device buffer may hold padding after them).
    len: usize,
    /// The query's scalars on the device, freed once its points are back.
    _scalars: DeviceBuffer<FrRepr>,
    points: Bases<C>,
    began: Event,
    ended: Event,
}

/// The device side of one generation: streams, kernels, staging buffers, time spent.
struct Gpu {
    device: Device,
    /// Multiplications.
    compute: Stream,
    /// Scalar uploads.
    up: Stream,
    /// Point downloads.
    down: Stream,
    engine: FixedBaseEngine,
    scalar_stage: Vec<PinnedBuffer<FrRepr>>,
    g1_stage: Vec<PinnedBuffer<G1AffineRepr>>,
    g2_stage: Vec<PinnedBuffer<G2AffineRepr>>,
    keep: bool,
    /// Host time staging and queueing uploads.
    upload: Duration,
    /// Host time downloading and converting points (waits for the device included).
    download: Duration,
    /// Device time of the multiplications.
    device_ms: f64,
}

impl Gpu {
    /// Uploads `scalars` and queues their multiplication; the host does not wait for it.
    /// With `pad`, that many identity points follow the query's points on the device.
    fn start<C: HostCurve>(
        &mut self,
        table: &FixedBaseTable<C>,
        section: Section,
        scalars: &[Scalar],
        pad: usize,
    ) -> Result<Pending<C>> {
        let t = Instant::now();
        let len = scalars.len();
        let on_device = self.upload_scalars(scalars)?;
        self.upload += t.elapsed();

        // The multiplication waits for its scalars; waiting before `began` keeps the upload
        // out of the kernels' device time.
        let uploaded = self.device.new_event()?;
        self.up.record(&uploaded)?;
        self.compute.wait(&uploaded)?;
        let began = self.device.new_event()?;
        let ended = self.device.new_event()?;
        self.compute.record(&began)?;
        let points = {
            let view = on_device.slice(..len);
            if pad == 0 {
                self.engine.mul_to_bases(&self.compute, table, &view)?
            } else {
                let mut buf = self.compute.alloc::<C::AffineRepr>(len + pad)?;
                self.engine
                    .mul(&self.compute, table, &view, &mut buf.slice_mut(..len))?;
                self.compute.zero(&mut buf.slice_mut(len..))?;
                Bases::from_device(buf)
            }
        };
        self.compute.record(&ended)?;
        tracing::debug!(section = %section, len, "query queued on the device");
        Ok(Pending {
            section,
            len,
            _scalars: on_device,
            points,
            began,
            ended,
        })
    }

    /// Copies `scalars` to a new device buffer (at least one element) through the pinned
    /// buffers, each refilled once its previous copy is done; the last partial chunk goes
    /// through ordinary memory.
    fn upload_scalars(&mut self, scalars: &[Scalar]) -> Result<DeviceBuffer<FrRepr>> {
        let mut dst = self.up.alloc::<FrRepr>(scalars.len().max(1))?;
        let chunk = self.scalar_stage[0].len();
        for (k, part) in scalars.chunks(chunk).enumerate() {
            let range = k * chunk..k * chunk + part.len();
            if part.len() == chunk {
                let stage = &mut self.scalar_stage[k % 2];
                let host = stage.as_mut_slice()?;
                host.par_iter_mut()
                    .zip(part.par_iter())
                    .for_each(|(d, s)| *d = FrRepr::from(*s));
                self.up
                    .copy_pinned_to_device(stage, &mut dst.slice_mut(range))?;
            } else {
                let tail: Vec<FrRepr> = part.par_iter().map(|s| FrRepr::from(*s)).collect();
                self.up.copy_to_device(&tail, &mut dst.slice_mut(range))?;
            }
        }
        Ok(dst)
    }

    /// Brings a query's points back as host points, checks a few against the host, and keeps
    /// the device copy when asked to.
    fn finish<C: HostCurve>(
        &mut self,
        pending: Pending<C>,
        scalars: &[Scalar],
    ) -> Result<Finished<C>> {
        let t = Instant::now();
        let host = self.download(&pending.points, pending.len)?;
        self.download += t.elapsed();
        let device_ms = f64::from(pending.began.elapsed_ms(&pending.ended)?);
        self.device_ms += device_ms;
        tracing::info!(
            section = %pending.section,
            points = pending.len,
            device_ms,
            "query generated"
        );
        spot_check::<C>(pending.section, scalars, &host)?;
        let kept = self.keep.then_some(pending.points);
        Ok((host, kept))
    }

    /// Copies the first `len` points of `points` to the host and converts them: each pinned
    /// buffer is converted while the other one fills.
    fn download<C: HostCurve>(&mut self, points: &Bases<C>, len: usize) -> Result<Vec<C::Affine>> {
        let src = points.points();
        let down = self.down.clone();
        let stage = C::stage(self);
        let chunk = stage[0].len();
        let pieces: Vec<_> = (0..len)
            .step_by(chunk)
            .map(|s| s..(s + chunk).min(len))
            .collect();
        let full = |k: usize| pieces.get(k).is_some_and(|r| r.len() == chunk);
        for k in 0..2 {
            if full(k) {
                down.copy_to_pinned(&src.slice(pieces[k].clone()), &mut stage[k])?;
            }
        }
        let mut out = Vec::with_capacity(len);
        for (k, piece) in pieces.iter().enumerate() {
            if full(k) {
                let buf = &mut stage[k % 2];
                out.par_extend(buf.as_slice()?.par_iter().map(C::to_host));
                if full(k + 2) {
                    down.copy_to_pinned(&src.slice(pieces[k + 2].clone()), buf)?;
                }
            } else {
                // Only the last piece can be short.
                let mut tail = vec![C::AffineRepr::default(); piece.len()];
                down.copy_to_host(&src.slice(piece.clone()), &mut tail)?;
                out.par_extend(tail.par_iter().map(C::to_host));
            }
        }
        Ok(out)
    }
}

/// Compares a few points of a query (the first, the last, and evenly spread ones) with the
/// same multiples of the generator computed on the host.
fn spot_check<C: MsmCurve>(
    section: Section,
    scalars: &[Scalar],
    points: &[C::Affine],
) -> Result<()> {
    let n = points.len();
    debug_assert_eq!(n, scalars.len());
    if n == 0 {
        return Ok(());
    }
    let mut picks: Vec<usize> = (0..SPOT_CHECKS).map(|k| k * n / SPOT_CHECKS).collect();
    picks.push(n - 1);
    picks.dedup();
    for index in picks {
        let want = (C::Affine::generator() * scalars[index]).to_affine();
        if points[index] != want {
            return Err(Error::GpuMismatch { section, index });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
