//! The CUDA engine: MSMs against bases uploaded once and kept on the device, with scalars
//! streamed from host (ideally pinned) memory or read from the device.
//!
//! One call runs, per pass over a group of windows and per chunk of points (one of each unless
//! the VRAM allowance is tight): the chunk's upload in pieces on the engine's copy stream, each
//! overlapping the previous piece's `prepare` (Montgomery → canonical; with the 0/1 split,
//! index lists of the ones and of the tail) and the batch addition of its ones; then a counting
//! sort of (bucket, point) pairs by signed window digit, and the bucket accumulation as a
//! balanced segmented reduction with affine inputs into XYZZ buckets. After the chunks, each window's buckets are summed (running sums in segments);
//! the window sums come back to the host, which combines them with Horner's rule. The host
//! waits once per call, for that last copy. Staged scalars that one chunk would take may run
//! in two chunks instead, each piece with a staging buffer of its own, so that the second
//! chunk's upload runs under the first chunk's sort and accumulation
//! ([`MsmConfig::upload_overlap`]).
//!
//! [`MsmEngine::msm_batch`] runs several scalar sets against the same bases, copying the next
//! set's scalars while the current one computes and combining each set's window sums on the
//! host while the next computes (module `batch`). [`HostBases`] keep bases that do not fit
//! the allowance in page-locked host memory; [`MsmEngine::msm_host_bases`] streams them
//! through the device in chunks ([`crate::streamed::StreamedPlan`]), the next chunk's upload
//! overlapping the current chunk's MSM.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuzk_cuda::Device;
//! use cuzk_msm::gpu::{MsmEngine, Scalars};
//! use cuzk_msm::{testing, G1};
//! let device = Device::open(0)?;
//! let stream = device.new_stream()?;
//! let engine = MsmEngine::new(&device)?;
//! let bases = engine.generate_bases::<G1>(&stream, 1 << 20, 7)?; // resident from now on
//! let scalars = testing::to_reprs(&testing::random_scalars(1 << 20, 1));
//! let mut pinned = device.alloc_pinned(scalars.len())?;
//! pinned.as_mut_slice()?.copy_from_slice(&scalars);
//! let sum = engine.msm::<G1>(&stream, &bases, Scalars::Pinned(&pinned))?;
//! # let _ = sum; Ok(()) }
//! ```

mod batch;
mod fixed;
mod host_bases;
mod launch;
mod run;
mod shift;
mod workspace;

use crate::curve::MsmCurve;
use crate::plan::{Plan, PlanInput, Sizes};
use crate::MsmError;
use cuzk_cuda::{Device, DeviceBuffer, PinnedBuffer, Stream};
use cuzk_field::{consts::FR_R, FrRepr, PrimeCurveAffine};
use group::Group;
use launch::Kernels;
use run::Profile;
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use workspace::Workspace;

pub use fixed::{
    default_fixed_bits, fixed_table_host, fixed_windows, FixedBaseEngine, FixedBaseTable,
    FIXED_MAX_BITS, FIXED_MAX_PER_THREAD, FIXED_MIN_BITS,
};
pub use host_bases::{HostBases, StreamedInfo};
pub use launch::GEN_POINTS_PER_THREAD;

/// Device memory left to others when the allowance is taken from the driver's free figure.
const VRAM_MARGIN: usize = 512 << 20;

/// Scalars sampled on the host to decide the 0/1 split and size the tail.
const SPLIT_SAMPLES: usize = 1024;

/// The 0/1 split's share of zeros and ones from which it pays: below it the extra index list
/// costs more than the skipped digits save.
const SPLIT_THRESHOLD: f64 = 0.1;

/// Whether scalars equal to 0 and 1 are taken out before Pippenger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// Every scalar goes through Pippenger (zero digits are skipped either way).
    Dense,
    /// Zeros are dropped, ones are summed by batch addition, the rest (the tail) goes through
    /// Pippenger with a window sized for the tail.
    Always,
    /// Split when a host-side sample finds at least 10% zeros and ones (host scalars only;
    /// device-resident scalars stay dense).
    #[default]
    Auto,
}

/// How the engine runs its MSMs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsmConfig {
    /// Device bytes one call may use for its work buffers (the resident bases are not
    /// counted). `None`: what the driver reports free at the call, plus the engine's own
    /// cached buffers, less 512 MiB. Smaller allowances chunk the work, same result.
    pub vram_allowance: Option<usize>,
    /// Window width in bits; `None` chooses per size and group ([`crate::plan::window_bits`]).
    pub window_bits: Option<u32>,
    /// The 0/1 split.
    pub split: Split,
    /// Time the phases of each call with events ([`CallInfo::phases`]); costs a little.
    pub profile: bool,
    /// Batch-affine pair levels before the XYZZ accumulation: each level sums every bucket's
    /// entries two by two in affine coordinates with one inversion per work item, about 6
    /// multiplications a pair instead of an XYZZ addition's 10, at the price of a window
    /// group's worth of affine points in VRAM (the plan drops the levels where they do not
    /// fit). `None`, the default, leaves the count to the plan
    /// ([`crate::plan::auto_affine_levels`]: dense G2 MSMs from 2^21 points, where they cut
    /// 14–20% on an H100, and none for G1, where they measured level); `Some(0)` runs none.
    pub affine_levels: Option<u32>,
    /// Most windows whose pair levels share one launch per level (0, the default: a pass).
    /// Either way the plan takes no more than fit with their level buffers in half of the
    /// allowance ([`crate::plan::PAIR_LEVEL_SHARE`]), at least one, spread evenly over the
    /// groups that takes. More windows share
    /// each work item's one inversion among more pairs and cut the launches, at the price of
    /// level buffers for all of them.
    pub pair_group: u32,
    /// Place each chunk's (bucket, point) pairs in two passes, through bins of about a million
    /// pairs written in runs (kernels/msm/bins.cuh), instead of the one-pass scatter's random
    /// 8-byte store per pair into gigabytes, at the price of a second pair buffer of a third
    /// of the first in VRAM (the plan scatters in one pass where it does not fit). `None`, the
    /// default, leaves it to the plan (binned from [`crate::plan::BIN_MIN_POINTS`] of tail);
    /// `Some(false)` never bins.
    pub binned_scatter: Option<bool>,
    /// Cut an MSM of staged scalars (pinned or host) that one chunk would take into two, so
    /// that the second half's upload runs under the first half's sort and accumulation, at
    /// the price of staging buffers for half the scalars and a second bucket array in VRAM
    /// and one addition of the second half's buckets into the first's
    /// ([`crate::plan::Plan::with_upload_overlap`]). `None`, the default, leaves it to the
    /// plan (where the hidden upload outweighs that addition, [`crate::plan::overlap_pays`],
    /// and it fits the allowance); `Some(true)` wherever it fits; `Some(false)` never.
    pub upload_overlap: Option<bool>,
}

/// Bases resident on the device, uploaded or generated once and used by many MSMs; optionally
/// with shifted copies of them ([`MsmEngine::shift_bases`]).
pub struct Bases<C: MsmCurve> {
    /// At least one element, since the driver refuses empty allocations. With copies, copy k
    /// at k·len holds 2^(shift_bits·k) times the bases.
    points: DeviceBuffer<C::AffineRepr>,
    len: usize,
    /// Copies held, the bases themselves included (1: none).
    copies: u32,
    /// The window width the copies were made for (0 without copies).
    shift_bits: u32,
}

impl<C: MsmCurve> Bases<C> {
    /// Wraps points already on the device (blst's affine layout, identity all zeros).
    pub fn from_device(points: DeviceBuffer<C::AffineRepr>) -> Self {
        let len = points.len();
        Bases {
            points,
            len,
            copies: 1,
            shift_bits: 0,
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies of the bases held on the device, the bases themselves included (1: none), and
    /// the window width they were made for (0 without copies).
    pub fn copies(&self) -> (u32, u32) {
        (self.copies, self.shift_bits)
    }

    /// Device bytes the points and their copies take.
    pub fn device_bytes(&self) -> usize {
        self.points.len() * std::mem::size_of::<C::AffineRepr>()
    }

    /// The device buffer of the points (one spare element when there are none), followed by
    /// their copies where there are any.
    pub fn points(&self) -> &DeviceBuffer<C::AffineRepr> {
        &self.points
    }

    /// The device buffer of the points, to refill in place: a caller that streams bases
    /// through the device in chunks reuses one `Bases` for every chunk. Copies, which would
    /// no longer match, stop being used.
    pub fn points_mut(&mut self) -> &mut DeviceBuffer<C::AffineRepr> {
        self.copies = 1;
        self.shift_bits = 0;
        &mut self.points
    }

    /// `input` for an MSM over these bases: with copies, their count and the width they were
    /// made for, which the plan must keep.
    fn plan_input(&self, input: PlanInput) -> PlanInput {
        MsmShape::over(self, input.n, input.staged).plan_input(input)
    }

    /// Copies the points back to the host.
    pub fn download(&self, stream: &Stream) -> Result<Vec<C::AffineRepr>, MsmError> {
        Ok(stream.download(&self.points.slice(..self.len))?)
    }
}

impl<C: MsmCurve> fmt::Debug for Bases<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bases")
            .field("group", &C::NAME)
            .field("len", &self.len())
            .field("copies", &self.copies)
            .field("shift_bits", &self.shift_bits)
            .finish()
    }
}

/// One MSM as the engine's work-buffer planning sees it ([`MsmEngine::reserve`],
/// [`MsmEngine::wanted_bytes`]): its points, where its scalars come from, and the shifted
/// copies of the bases it reads, which fix its window width and shrink its buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmShape {
    /// Points (scalars) of the MSM.
    pub n: usize,
    /// Scalars from the host (staged in pieces), else on the device.
    pub host: bool,
    /// Copies of the bases held, the bases themselves included (1: none).
    pub copies: u32,
    /// The window width the copies were made for (0 without copies).
    pub shift_bits: u32,
}

impl MsmShape {
    /// An MSM of `n` points over bases without copies.
    pub fn new(n: usize, host: bool) -> MsmShape {
        MsmShape {
            n,
            host,
            copies: 1,
            shift_bits: 0,
        }
    }

    /// An MSM of `n` of `bases`, with their copies.
    pub fn over<C: MsmCurve>(bases: &Bases<C>, n: usize, host: bool) -> MsmShape {
        let (copies, shift_bits) = bases.copies();
        MsmShape {
            copies,
            shift_bits,
            ..MsmShape::new(n, host)
        }
    }

    /// `input` with this shape's copies, as [`Bases`] gives them to a call.
    fn plan_input(&self, input: PlanInput) -> PlanInput {
        if self.copies <= 1 {
            return input;
        }
        PlanInput {
            copies: self.copies,
            bits: Some(self.shift_bits),
            ..input
        }
    }
}

/// The scalars of one MSM, in the kernels' layout (Montgomery form, as `FrRepr::from` makes).
/// The MSM pairs them with the first `len` bases.
#[derive(Clone, Debug)]
pub enum Scalars<'a> {
    /// Page-locked host memory: copied in chunks on the engine's copy stream, overlapping
    /// compute. The fast path for host scalars.
    Pinned(&'a PinnedBuffer<FrRepr>),
    /// Part of a page-locked buffer, as [`Scalars::Pinned`].
    PinnedRange(&'a PinnedBuffer<FrRepr>, Range<usize>),
    /// Ordinary host memory: the driver stages every copy, at a fraction of pinned speed.
    Host(&'a [FrRepr]),
    /// Device memory, read in place (for scalars a previous step left on the device).
    Device(&'a DeviceBuffer<FrRepr>),
    /// Part of a device buffer, as [`Scalars::Device`].
    DeviceRange(&'a DeviceBuffer<FrRepr>, Range<usize>),
}

impl Scalars<'_> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            Scalars::Pinned(p) => p.len(),
            Scalars::PinnedRange(_, r) => r.len(),
            Scalars::Host(h) => h.len(),
            Scalars::Device(d) => d.len(),
            Scalars::DeviceRange(_, r) => r.len(),
        }
    }

    /// Whether there are no scalars.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a call reads its scalars, resolved.
enum Source<'a> {
    Host(&'a [FrRepr]),
    /// A buffer and the index of the call's first scalar in it.
    Device(&'a DeviceBuffer<FrRepr>, usize),
}

/// What one MSM call did: its plan, whether it split, and with profiling its phase times.
#[derive(Clone, Debug, PartialEq)]
pub struct CallInfo {
    /// The plan it ran.
    pub plan: Plan,
    /// Whether zeros and ones were split off.
    pub split: bool,
    /// Milliseconds of device time per phase, summed over chunks and passes (profiling only).
    pub phases: Vec<(&'static str, f64)>,
}

/// The MSM engine of one device: its kernels, a copy stream, and cached work buffers.
pub struct MsmEngine {
    device: Device,
    kernels: Kernels,
    copy: Stream,
    config: MsmConfig,
    /// One workspace per group, reused while large enough.
    workspaces: Mutex<HashMap<&'static str, Box<dyn Any + Send>>>,
    /// Workspaces allocated so far ([`MsmEngine::workspace_allocations`]).
    allocations: AtomicU64,
}

impl fmt::Debug for MsmEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsmEngine")
            .field("device", &self.device)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic mid-call leaves at worst a workspace with stale contents, which every call
    // clears before use.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MsmEngine {
    /// An engine with the default configuration (whole free VRAM, widths by size, auto split).
    pub fn new(device: &Device) -> Result<Self, MsmError> {
        Self::with_config(device, MsmConfig::default())
    }

    /// An engine with `config`.
    pub fn with_config(device: &Device, config: MsmConfig) -> Result<Self, MsmError> {
        Ok(MsmEngine {
            device: device.clone(),
            kernels: Kernels::load(device)?,
            copy: device.new_stream()?,
            config,
            workspaces: Mutex::new(HashMap::new()),
            allocations: AtomicU64::new(0),
        })
    }

    /// The engine's configuration.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// Uploads bases once; they stay on the device for every later MSM.
    pub fn upload_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        points: &[C::AffineRepr],
    ) -> Result<Bases<C>, MsmError> {
        if points.is_empty() {
            let points = stream.alloc_zeroed(1)?;
            return Ok(Bases {
                len: 0,
                ..Bases::from_device(points)
            });
        }
        Ok(Bases::from_device(stream.upload(points)?))
    }

    /// `n` valid points made on the device from `seed`: point i is m_i·g for the multipliers
    /// of [`crate::testing::generated_multiplier`] (with [`GEN_POINTS_PER_THREAD`]), so large
    /// benchmarks and tests need no bases shipped and can check results in linear time.
    pub fn generate_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        n: usize,
        seed: u64,
    ) -> Result<Bases<C>, MsmError> {
        if n == 0 {
            return self.upload_bases(stream, &[]);
        }
        let mut points = stream.alloc::<C::AffineRepr>(n)?;
        let g = C::to_repr(&C::Affine::generator());
        launch::gen_points::<C>(stream, &self.kernels, &mut points, &g, seed)?;
        Ok(Bases::from_device(points))
    }

    /// Σ scalars[i]·bases[i] with the engine's configuration. Returns once the result is on the
    /// host; the scalars may be reused then.
    pub fn msm<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &Bases<C>,
        scalars: Scalars<'_>,
    ) -> Result<C::Projective, MsmError> {
        self.msm_with(stream, bases, scalars, &self.config)
            .map(|(p, _)| p)
    }

    /// Σ scalars[i]·bases[i] with `config` for this call, and what the call did.
    pub fn msm_with<C: MsmCurve>(
        &self,
        stream: &Stream,
        bases: &Bases<C>,
        scalars: Scalars<'_>,
        config: &MsmConfig,
    ) -> Result<(C::Projective, CallInfo), MsmError> {
        let n = scalars.len();
        check_len(bases.len(), n)?;
        let source = resolve(scalars, bases.points.device_ordinal())?;
        let (split, tail) = decide_split(&source, n, config.split);
        let mut cache = lock(&self.workspaces);
        let allowance = self.allowance::<C>(&cache, config)?;
        let staged = matches!(source, Source::Host(_));
        let input =
            bases.plan_input(self.plan_input::<C>(n, tail, split, staged, config, allowance));
        let plan = held_plan::<C>(&cache, Plan::new(&input)?, &input);
        let mut info = CallInfo {
            plan,
            split,
            phases: Vec::new(),
        };
        if n == 0 {
            return Ok((C::Projective::identity(), info));
        }
        let ws = workspace::<C>(
            &mut cache,
            &self.allocations,
            stream,
            &plan.sizes,
            Some(allowance),
        )?;
        let span = tracing::debug_span!(
            "msm",
            group = C::NAME,
            n,
            split,
            bits = plan.bits,
            passes = plan.passes(),
            chunks = plan.chunks(n)
        );
        let _guard = span.enter();
        let mut profile = self.profile(config);
        self.run::<C>(stream, &bases.points, &source, n, &info, ws, &mut profile)?;
        // The call's one wait: the window sums and the ones' sum, a few hundred bytes each.
        let sums: Vec<C::XyzzRepr> =
            stream.download(&ws.results.slice(..plan.windows as usize + 1))?;
        let result = run::combine::<C>(&sums, plan.set_bits())?;
        if let Some(p) = profile {
            info.phases = p.totals()?;
        }
        Ok((result, info))
    }

    /// Device bytes a call may use: the configured allowance, or what the driver reports free
    /// plus the engine's cached buffers of group `C`, less a margin.
    fn allowance<C: MsmCurve>(
        &self,
        cache: &HashMap<&'static str, Box<dyn Any + Send>>,
        config: &MsmConfig,
    ) -> Result<usize, MsmError> {
        if let Some(a) = config.vram_allowance {
            return Ok(a);
        }
        let (free, _) = self.device.memory_info()?;
        Ok((free + cached_bytes::<C>(cache)).saturating_sub(VRAM_MARGIN))
    }

    fn plan_input<C: MsmCurve>(
        &self,
        n: usize,
        tail: usize,
        split: bool,
        staged: bool,
        config: &MsmConfig,
        allowance: usize,
    ) -> PlanInput {
        PlanInput {
            n,
            tail,
            bits: config.window_bits,
            split,
            staged,
            xyzz_bytes: std::mem::size_of::<C::XyzzRepr>(),
            sm_count: self.device.info().sm_count,
            allowance,
            affine_levels: config.affine_levels,
            pair_group: config.pair_group,
            binned_scatter: config.binned_scatter,
            copies: 1,
            upload_overlap: config.upload_overlap,
        }
    }

    /// Phase timing for one MSM when `config` asks for it.
    fn profile(&self, config: &MsmConfig) -> Option<Profile> {
        config
            .profile
            .then(|| Profile(cuzk_cuda::Timeline::new(&self.device)))
    }

    /// Allocates now the work buffers that MSMs of `shapes` in group `C` will need (each
    /// shape's scalars from the host, staged in pieces, when `host`; else read on the device),
    /// whatever tail their 0/1 split leaves (the plans of [`crate::plan::covering_inputs`] for
    /// the engine's split mode), joined into one workspace ([`crate::plan::covering_of`]),
    /// unless the cached one already serves them: the first call of each shape then allocates
    /// nothing. Where their plans do not fit the allowance together, the workspace holds them
    /// cut smaller, and each call runs its plan cut to it ([`Plan::within`]). Workspaces
    /// reserved in turn grow to serve every reservation where they fit the allowance together.
    /// `beside`: device bytes the calls will find allocated that are free now (a proof's a, b,
    /// c), left out of the allowance so that the reserved buffers are those the calls' own
    /// plans ask for. Returns the device bytes the group's workspace holds.
    pub fn reserve<C: MsmCurve>(
        &self,
        stream: &Stream,
        shapes: &[MsmShape],
        beside: usize,
        config: &MsmConfig,
    ) -> Result<usize, MsmError> {
        let mut cache = lock(&self.workspaces);
        if shapes.iter().any(|s| s.n > 0) {
            let allowance = match config.vram_allowance {
                Some(a) => a,
                None => self.allowance::<C>(&cache, config)?.saturating_sub(beside),
            };
            let sizes = self.covering::<C>(shapes, config, allowance)?;
            workspace::<C>(
                &mut cache,
                &self.allocations,
                stream,
                &sizes,
                Some(allowance),
            )?;
        }
        Ok(cached_bytes::<C>(&cache))
    }

    /// Device bytes of the work buffers that would serve MSMs of every shape in group `C` (as
    /// [`MsmEngine::reserve`] takes them) with no limit on VRAM: what their
    /// plans ask for where memory is plentiful. A caller sharing the device between groups
    /// divides its room by these figures. Allocates nothing.
    pub fn wanted_bytes<C: MsmCurve>(
        &self,
        shapes: &[MsmShape],
        config: &MsmConfig,
    ) -> Result<usize, MsmError> {
        let sizes = self.covering::<C>(shapes, config, usize::MAX)?;
        Ok(sizes.bytes(std::mem::size_of::<C::XyzzRepr>()))
    }

    /// The work buffers that serve MSMs of `shapes` in group `C` under `allowance`, whatever
    /// tail their 0/1 split leaves.
    fn covering<C: MsmCurve>(
        &self,
        shapes: &[MsmShape],
        config: &MsmConfig,
        allowance: usize,
    ) -> Result<Sizes, MsmError> {
        let mut inputs = Vec::new();
        for &shape in shapes.iter().filter(|s| s.n > 0) {
            let MsmShape { n, host, .. } = shape;
            // Which plans a call can take (see `decide_split`): host scalars split or not as
            // the mode and their sample say; device scalars split only when always asked to,
            // and then with every scalar counted as tail.
            let (dense, split) = match (config.split, host) {
                (Split::Dense, _) => (true, false),
                (Split::Always, true) => (false, true),
                (Split::Always, false) => (false, false),
                (Split::Auto, true) => (true, true),
                (Split::Auto, false) => (true, false),
            };
            let base = shape.plan_input(self.plan_input::<C>(n, n, false, host, config, allowance));
            if !dense && !split {
                inputs.push(PlanInput {
                    split: true,
                    ..base
                });
            } else {
                inputs.extend(crate::plan::covering_inputs(&base, dense, split));
            }
        }
        crate::plan::covering_of(&inputs, allowance)
    }

    /// How many times this engine has allocated a workspace (a call whose plan the cached
    /// buffers did not serve, or a [`MsmEngine::reserve`]): steady calls add none.
    pub fn workspace_allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// Device bytes of the cached work buffers of both groups.
    pub fn workspace_bytes(&self) -> usize {
        let cache = lock(&self.workspaces);
        cached_bytes::<crate::curve::G1>(&cache) + cached_bytes::<crate::curve::G2>(&cache)
    }

    /// Frees the cached work buffers (the next call allocates again).
    pub fn release_workspaces(&self) {
        lock(&self.workspaces).clear();
    }
}

/// An MSM pairs each scalar with one base.
fn check_len(bases: usize, scalars: usize) -> Result<(), MsmError> {
    if scalars > bases {
        return Err(MsmError::LengthMismatch { bases, scalars });
    }
    Ok(())
}

/// Where `scalars` are read from, checked against the device (`ordinal`) of the bases.
fn resolve(scalars: Scalars<'_>, ordinal: usize) -> Result<Source<'_>, MsmError> {
    Ok(match scalars {
        // Slices of page-locked memory copy asynchronously at full speed; the borrow keeps
        // the memory unchanged until the call has waited for its last copy.
        Scalars::Pinned(p) => Source::Host(p.as_slice()?),
        Scalars::PinnedRange(p, r) => {
            let all = p.as_slice()?;
            if r.end > all.len() || r.start > r.end {
                return Err(MsmError::RangeOutOfBounds {
                    start: r.start,
                    end: r.end,
                    len: all.len(),
                });
            }
            Source::Host(&all[r])
        }
        Scalars::Host(h) => Source::Host(h),
        Scalars::Device(d) => {
            if d.device_ordinal() != ordinal {
                return Err(MsmError::WrongDevice {
                    bases: ordinal,
                    scalars: d.device_ordinal(),
                });
            }
            Source::Device(d, 0)
        }
        Scalars::DeviceRange(d, r) => {
            if d.device_ordinal() != ordinal {
                return Err(MsmError::WrongDevice {
                    bases: ordinal,
                    scalars: d.device_ordinal(),
                });
            }
            if r.end > d.len() || r.start > r.end {
                return Err(MsmError::RangeOutOfBounds {
                    start: r.start,
                    end: r.end,
                    len: d.len(),
                });
            }
            Source::Device(d, r.start)
        }
    })
}

/// The cached workspace of group `C`, reallocated when it does not cover `sizes`.
///
/// With `room` (device bytes the call may use), a reallocation keeps the larger of each old
/// and new buffer when both fit in `room` together, so that calls of different plans (a
/// proof's sparse host MSMs and its dense device one) settle on one workspace that serves
/// them all instead of reallocating gigabytes at every change of plan; without, or when they
/// do not fit, the new workspace has exactly `sizes`.
fn workspace<'c, C: MsmCurve>(
    cache: &'c mut HashMap<&'static str, Box<dyn Any + Send>>,
    allocations: &AtomicU64,
    stream: &Stream,
    sizes: &Sizes,
    room: Option<usize>,
) -> Result<&'c mut Workspace<C>, MsmError> {
    let old = cache
        .get(C::NAME)
        .and_then(|w| w.downcast_ref::<Workspace<C>>())
        .map(|w| w.sizes);
    if !old.is_some_and(|o| o.covers(sizes)) {
        let xyzz = std::mem::size_of::<C::XyzzRepr>();
        let sizes = match (old, room) {
            (Some(o), Some(room)) if o.max(sizes).bytes(xyzz) <= room => o.max(sizes),
            _ => *sizes,
        };
        // Free the old buffers before allocating the new ones, and wait for the stream: memory
        // freed in stream order stays with the stream's pool until a synchronisation, and
        // the pool may not fit the new buffers' sizes into the old ones' blocks, so without
        // the wait a card with no other room fails the allocation.
        if cache.remove(C::NAME).is_some() {
            stream.synchronize()?;
        }
        tracing::debug!(
            group = C::NAME,
            bytes = sizes.bytes(xyzz),
            old = old.map_or(0, |o| o.bytes(xyzz)),
            room,
            "MSM workspace allocated"
        );
        let ws = Workspace::<C>::new(stream, sizes)?;
        allocations.fetch_add(1, Ordering::Relaxed);
        // Stream-ordered allocations must be complete before the copy stream touches them.
        stream.synchronize()?;
        cache.insert(C::NAME, Box::new(ws));
    }
    Ok(cache
        .get_mut(C::NAME)
        .and_then(|w| w.downcast_mut::<Workspace<C>>())
        .expect("inserted above"))
}

/// `plan`, or where group `C`'s cached buffers do not serve it and no workspace serving both
/// fits the allowance, the plan cut to run in them ([`Plan::within`]) where that costs at
/// most twice the pieces (chunks times passes): cheaper than freeing and allocating
/// gigabytes and waiting for the stream between every two MSMs of a proof on a card without
/// room for both.
fn held_plan<C: MsmCurve>(
    cache: &HashMap<&'static str, Box<dyn Any + Send>>,
    plan: Plan,
    input: &PlanInput,
) -> Plan {
    let Some(held) = cache
        .get(C::NAME)
        .and_then(|w| w.downcast_ref::<Workspace<C>>())
        .map(|w| w.sizes)
    else {
        return plan;
    };
    let xyzz = std::mem::size_of::<C::XyzzRepr>();
    if held.covers(&plan.sizes) || held.max(&plan.sizes).bytes(xyzz) <= input.allowance {
        return plan;
    }
    match plan.within(input, &held) {
        Some(cut) => {
            tracing::debug!(
                group = C::NAME,
                chunk = cut.chunk,
                planned = plan.chunk,
                pass_windows = cut.pass_windows,
                planned_windows = plan.pass_windows,
                "MSM planned within the cached workspace"
            );
            cut
        }
        None => plan,
    }
}

/// Device bytes of group `C`'s cached work buffers (0 when it has none).
fn cached_bytes<C: MsmCurve>(cache: &HashMap<&'static str, Box<dyn Any + Send>>) -> usize {
    cache
        .get(C::NAME)
        .and_then(|w| w.downcast_ref::<Workspace<C>>())
        .map_or(0, |w| w.sizes.bytes(std::mem::size_of::<C::XyzzRepr>()))
}

/// The share of zeros and ones among `sample` (0 for an empty one).
fn trivial_share<'a>(sample: impl IntoIterator<Item = &'a FrRepr>) -> f64 {
    let (mut seen, mut trivial) = (0usize, 0usize);
    for s in sample {
        seen += 1;
        trivial += usize::from(s.limbs == [0; 4] || s.limbs == FR_R);
    }
    if seen == 0 {
        return 0.0;
    }
    trivial as f64 / seen as f64
}

impl Split {
    /// Scalars the engine samples on the host to decide [`Split::Auto`]; a caller deciding
    /// for device-resident scalars ([`Split::for_sample`]) draws about as many.
    pub const SAMPLES: usize = SPLIT_SAMPLES;

    /// What [`Split::Auto`] decides for host scalars like `sample` (drawn evenly from them):
    /// [`Split::Always`] when at least 10% are zeros and ones, else [`Split::Dense`]. For
    /// scalars on the device, which `Auto` leaves dense, decided from a host copy.
    pub fn for_sample<'a>(sample: impl IntoIterator<Item = &'a FrRepr>) -> Split {
        if trivial_share(sample) >= SPLIT_THRESHOLD {
            Split::Always
        } else {
            Split::Dense
        }
    }
}

/// Whether to split off zeros and ones, and how many scalars are expected to remain.
fn decide_split(source: &Source<'_>, n: usize, mode: Split) -> (bool, usize) {
    let sample = |h: &[FrRepr]| -> f64 {
        let step = (h.len() / SPLIT_SAMPLES).max(1);
        trivial_share(h.iter().step_by(step))
    };
    match (mode, source) {
        (Split::Dense, _) => (false, n),
        (Split::Always, Source::Host(h)) => {
            let share = sample(h);
            (true, ((1.0 - share) * n as f64).ceil() as usize)
        }
        (Split::Always, Source::Device(..)) => (true, n),
        (Split::Auto, Source::Host(h)) => {
            let share = sample(h);
            if share >= SPLIT_THRESHOLD {
                (true, ((1.0 - share) * n as f64).ceil() as usize)
            } else {
                (false, n)
            }
        }
        (Split::Auto, Source::Device(..)) => (false, n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{random_scalars, sparse_scalars, to_reprs};

    #[test]
    fn split_follows_the_share_of_zeros_and_ones() {
        let dense = to_reprs(&random_scalars(10_000, 1));
        assert_eq!(
            decide_split(&Source::Host(&dense), 10_000, Split::Auto),
            (false, 10_000)
        );
        assert!(decide_split(&Source::Host(&dense), 10_000, Split::Always).0);
        let sparse = to_reprs(&sparse_scalars(10_000, 0.5, 0.49, 2));
        let (split, tail) = decide_split(&Source::Host(&sparse), 10_000, Split::Auto);
        assert!(split);
        assert!(tail < 500, "tail estimate {tail}");
        assert_eq!(
            decide_split(&Source::Host(&sparse), 10_000, Split::Dense),
            (false, 10_000)
        );
    }
}
