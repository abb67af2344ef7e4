//! The GPU prover of one lane: a compute stream and a copy stream on one device, the NTT and
//! MSM engines, and the pinned witness pool.
//!
//! One proof, parameters resident:
//! ```text
//! copy stream:    upload a, b, c ─────────────┐ (event)
//! compute stream: MSM L, MSM A, MSM B₁, MSM B₂ ┴─ H step (iNTT ×3, coset NTT ×2, a·b, coset iNTT, − c) ─ MSM H (h stays on the device)
//! host:           assemble with r, s
//! ```
//! With the circuit's PCE on the device ([`DevicePce`], parameters resident), the witness
//! goes up instead of a, b, c:
//! ```text
//! copy stream:    upload w ┐
//! compute stream:          └ a, b, c = A·w, B·w, C·w and a·b = c checked ─ MSM L ─ gather A, MSM A
//!                 ─ gather B, MSM B₁, MSM B₂ ─ H step ─ MSM H
//! ```
//! Parameters streamed (they do not fit the VRAM budget): upload a, b, c → H step → h back to
//! pinned memory, the a/b/c buffers freed → every MSM with its bases copied in chunks.

use crate::device_pce::{device_eval_bytes, DevicePce};
use crate::error::{Error, Result};
use crate::params::{DeviceParameters, Queries, Residency, Store};
use crate::prep::{prepare, prepare_for_device, PreparedWitness, Staged, WitnessOnly};
use crate::stage::{HostPoint, Stager, STAGE_BYTES};
use cuzk_cuda::packed::{self, DevicePacked};
use cuzk_cuda::sparse::{self, ALL_SATISFIED};
use cuzk_cuda::{Device, DeviceBuffer, Event, PinnedBuffer, Stream, Timeline};
use cuzk_field::{FrRepr, G1Projective, Scalar};
use cuzk_groth16::parts::{assemble, check_delta, Sums};
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_mem::{Budget, MemInfo, PinnedPool, PooledPinned, Reservation};
use cuzk_msm::gpu::{Bases, MsmConfig, MsmEngine, Scalars, Split};
use cuzk_msm::{MsmCurve, G1, G2};
use cuzk_ntt::gpu::NttEngine;
use cuzk_synth::{Density, Pce, Witness};
use group::Group;
use std::fmt;
use std::ops::Range;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

mod copies;
mod shares;
mod warm;
pub use copies::HCopies;
pub use shares::msm_work_bytes;
use shares::{g1_allowance_within, Shapes};
pub use warm::Warmed;

/// Device bytes a G1 MSM may use for its work buffers when nothing else limits it (G2's get
/// a quarter of that besides, [`msm_work_bytes`]).
const DEFAULT_MSM_VRAM: u64 = 8 << 30;

/// Upper bound of a prover's own pinned pool.
const DEFAULT_PINNED_MAX: u64 = 64 << 30;

/// Below this an MSM would run in so many chunks that the plan is not worth running.
const MIN_MSM_VRAM: u64 = 256 << 20;

/// Device bytes of one streamed-bases chunk per group, by default.
const CHUNK_BYTES: u64 = 512 << 20;

/// Device bytes of a proof's a, b and c over a domain of `n`.
fn abc_bytes(n: usize) -> u64 {
    3 * n as u64 * std::mem::size_of::<FrRepr>() as u64
}

/// How a [`GpuProver`] runs.
#[derive(Clone, Debug)]
pub struct GpuProverConfig {
    /// Where parameters loaded by this prover live.
    pub residency: Residency,
    /// The device's VRAM budget, shared by every lane on it: each proof reserves its
    /// working set before allocating it, resident parameters reserve their points. `None`:
    /// unmetered (one lane owning the device).
    pub budget: Option<Budget>,
    /// Device bytes one G1 MSM may use for work buffers; the G2 MSM gets a quarter of that
    /// besides, and a proof counts both ([`msm_work_bytes`]). `None`: under a budget 8 GiB
    /// or what it leaves; without one, the device's room beside the proof divided by what
    /// each group's MSMs ask for. Smaller values chunk the MSMs; the results are the same.
    pub msm_vram: Option<u64>,
    /// The device's pinned host pool, shared by its lanes (witness buffers are lent from it
    /// and returned after the proof). `None`: the prover makes its own, of
    /// [`GpuProverConfig::pinned_bytes`].
    pub pinned_pool: Option<PinnedPool>,
    /// Capacity of the prover's own pinned pool (`None`: half the host's memory, at most
    /// 64 GiB); it bounds how many witnesses are prepared ahead.
    pub pinned_bytes: Option<u64>,
    /// Device bytes of the chunk buffer (per group) through which streamed parameters pass.
    pub stream_chunk: u64,
    /// Under a budget, let the device keep the memory proofs free mapped (up to the
    /// budget's capacity) for the next proofs' allocations instead of unmapping it at every
    /// synchronisation ([`Device::keep_freed_memory`]); [`GpuProver::release_buffers`] gives
    /// it back. Unmetered provers never keep it (their MSMs size themselves by the memory the
    /// driver reports free).
    pub keep_freed_vram: bool,
    /// NTT pass factors of order up to `2^this` from one table instead of the product of two
    /// ([`NttEngine::set_direct_factor_log`]); `None`: the engine's default. A larger bound
    /// saves one multiplication per element in the top pass of domains above 2^20 for a table
    /// per direction as large as one of a, b, c; the working set of each proof counts it.
    pub ntt_direct_factor_log: Option<u32>,
    /// Batch-affine pair levels of every MSM ([`MsmConfig::affine_levels`]; 0, the default,
    /// runs none, where the MSM engine alone would choose them for dense G2 MSMs from 2^21
    /// points). Each MSM's plan keeps them only where they fit its allowance. Off in the
    /// prover: a proof's one G2 MSM (B) takes a few ms when its scalars split into 0/1 and a
    /// tail (Filecoin's circuits), and reserving its workspace for the dense alternative would
    /// hold level buffers of up to half of the allowance for the whole run.
    pub msm_affine_levels: u32,
    /// Place every MSM's pairs by the binned scatter ([`MsmConfig::binned_scatter`]; `None`,
    /// the default, leaves it to each MSM's plan).
    pub msm_binned_scatter: Option<bool>,
    /// Cut the MSMs of pinned scalars (L, A, B) in two so that the second half's upload runs
    /// under the first half's work ([`MsmConfig::upload_overlap`]). `Some(false)`, the
    /// default, never does: the reservations and budgets would count the extra staging and
    /// bucket arrays before the partition has been measured with them; `None` leaves it to
    /// each MSM's plan.
    pub msm_upload_overlap: Option<bool>,
    /// Window width of shifted copies of the H bases ([`GpuProver::copy_h`]; the MSM's window
    /// range, 2 to 24; 22 is the width measured with few copies), made where an unmetered
    /// prover's device has room for them beside one host-evaluating proof. `None`, the
    /// default: no copies (not the default until measured against the bases alone).
    pub h_copy_bits: Option<u32>,
}

impl Default for GpuProverConfig {
    fn default() -> Self {
        GpuProverConfig {
            residency: Residency::Auto,
            budget: None,
            msm_vram: None,
            pinned_pool: None,
            pinned_bytes: None,
            stream_chunk: CHUNK_BYTES,
            keep_freed_vram: true,
            ntt_direct_factor_log: None,
            msm_affine_levels: 0,
            msm_binned_scatter: None,
            msm_upload_overlap: Some(false),
            h_copy_bits: None,
        }
    }
}

/// Where one proof's time went. Device phases are timed with events on the compute stream;
/// the rest on the host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProofTimings {
    /// Evaluating and checking a, b, c: into pinned memory on the host, or on the device
    /// (compute stream) when [`ProofTimings::eval_on_device`].
    pub eval_ms: f64,
    /// Laying out the MSM scalars (host; the witness alone when the device evaluates).
    pub scalars_ms: f64,
    /// Gathering the A and B scalars out of the witness on the device (device evaluation).
    pub gather_ms: f64,
    /// Copying a, b, c to the device, or the witness when the device evaluates (copy
    /// stream; overlaps the first MSMs when resident).
    pub upload_ms: f64,
    /// The H step: iNTT of a, b, c, coset NTT of a and b, a·b, coset iNTT, minus c's
    /// coefficients (all over Z).
    pub ntt_ms: f64,
    /// MSM of the H query.
    pub msm_h_ms: f64,
    /// MSM of the L query.
    pub msm_l_ms: f64,
    /// MSM of the A query.
    pub msm_a_ms: f64,
    /// MSM of the B query in G1.
    pub msm_b_g1_ms: f64,
    /// MSM of the B query in G2.
    pub msm_b_g2_ms: f64,
    /// Combining the sums with r and s (host).
    pub assembly_ms: f64,
    /// Releasing the proof's device buffers (host).
    pub free_ms: f64,
    /// Device time in kernels (the NTT and MSM phases; they run one after another).
    pub gpu_busy_ms: f64,
    /// Device time from the start of the upload to the end of the last MSM.
    pub gpu_span_ms: f64,
    /// Wall time of the device part of the proof, from upload to assembled proof (host).
    pub prove_ms: f64,
    /// Whether the parameters were resident.
    pub resident: bool,
    /// Whether a, b, c were evaluated on the device (from the circuit's [`DevicePce`]).
    pub eval_on_device: bool,
    /// Witness bytes the proof copied from host to device: a, b and c, and every scalar the
    /// MSMs read from host memory (B's twice, for G1 and G2; with streamed parameters also
    /// h, which comes back to the host for its MSM). Streamed parameters' points are not
    /// counted.
    pub witness_upload_bytes: u64,
}

impl ProofTimings {
    /// 1 − busy/span: the share of the proof's device time with no kernel running.
    pub fn idle_share(&self) -> f64 {
        if self.gpu_span_ms <= 0.0 {
            return 0.0;
        }
        (1.0 - self.gpu_busy_ms / self.gpu_span_ms).max(0.0)
    }

    /// The phases as (name, milliseconds), in pipeline order.
    pub fn phases(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("eval", self.eval_ms),
            ("scalars", self.scalars_ms),
            ("gather", self.gather_ms),
            ("upload", self.upload_ms),
            ("ntt", self.ntt_ms),
            ("msm_h", self.msm_h_ms),
            ("msm_l", self.msm_l_ms),
            ("msm_a", self.msm_a_ms),
            ("msm_b_g1", self.msm_b_g1_ms),
            ("msm_b_g2", self.msm_b_g2_ms),
            ("assembly", self.assembly_ms),
            ("free", self.free_ms),
            ("prove", self.prove_ms),
        ]
    }
}

/// Chunk buffers and stagers for streamed parameters, made on first use.
struct Streaming {
    g1: Bases<G1>,
    g2: Bases<G2>,
    g1_stage: Stager<<G1 as MsmCurve>::AffineRepr>,
    g2_stage: Stager<<G2 as MsmCurve>::AffineRepr>,
}

/// One lane's GPU prover (see the module docs). Several lanes on one device share a
/// [`GpuProverConfig::budget`] and [`DeviceParameters`]; one lane proves one witness at a
/// time (calls from several threads take turns).
pub struct GpuProver {
    device: Device,
    stream: Stream,
    copy: Stream,
    ntt: NttEngine,
    msm: MsmEngine,
    config: GpuProverConfig,
    pool: PinnedPool,
    streaming: Mutex<Option<Streaming>>,
    turn: Mutex<()>,
}

impl fmt::Debug for GpuProver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuProver")
            .field("device", &self.device.ordinal())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// a, b, c on the device, and the events around their upload on the copy stream.
type Uploaded = ([DeviceBuffer<FrRepr>; 3], (Event, Event));

impl GpuProver {
    /// A prover on `device` (loads the kernels, makes its streams).
    pub fn new(device: &Device, config: GpuProverConfig) -> Result<Self> {
        let pool = match &config.pinned_pool {
            Some(p) => p.clone(),
            None => {
                let bytes = match config.pinned_bytes {
                    Some(b) => b,
                    None => (MemInfo::read()?.total / 2).min(DEFAULT_PINNED_MAX),
                };
                PinnedPool::new(device, bytes, None)
            }
        };
        if let (Some(budget), true) = (&config.budget, config.keep_freed_vram) {
            device.keep_freed_memory(budget.capacity())?;
        }
        let ntt = NttEngine::new(device)?;
        if let Some(log) = config.ntt_direct_factor_log {
            ntt.set_direct_factor_log(log)?;
        }
        Ok(GpuProver {
            device: device.clone(),
            stream: device.new_stream()?,
            copy: device.new_stream()?,
            ntt,
            msm: MsmEngine::with_config(
                device,
                MsmConfig {
                    affine_levels: Some(config.msm_affine_levels),
                    binned_scatter: config.msm_binned_scatter,
                    upload_overlap: config.msm_upload_overlap,
                    ..MsmConfig::default()
                },
            )?,
            pool,
            config,
            streaming: Mutex::new(None),
            turn: Mutex::new(()),
        })
    }

    /// The prover's device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Places `params` on this prover's device (resident or streamed, per the
    /// configuration and budget), with shifted copies of the H bases where the configuration
    /// asks for them and they fit ([`GpuProver::copy_h`]). Share the result between the lanes
    /// of the device.
    pub fn load(&self, params: Arc<PreparedParameters>) -> Result<DeviceParameters> {
        let n = params.h().len() + 1;
        let working = self.working_set_bytes(n)?;
        let mut placed = DeviceParameters::load(
            &self.device,
            &self.stream,
            params,
            self.config.residency,
            self.config.budget.as_ref(),
            working,
        )?;
        // Copies are a speed-up: without them every proof is the same, only slower.
        if let Err(e) = self.copy_h(&mut placed) {
            tracing::warn!(device = self.device.ordinal(), error = %e, "no copies of the H bases");
        }
        Ok(placed)
    }

    /// Device bytes one proof of domain size `n` needs besides resident parameters: a, b, c,
    /// the NTT tables and both groups' MSM work ([`msm_work_bytes`] of the G1 allowance; what
    /// [`GpuProver::load`] reserves room for when it decides whether parameters may be
    /// resident).
    pub fn working_set_bytes(&self, n: usize) -> Result<u64> {
        let (vectors, g1) = self.working_set(n)?;
        Ok(vectors + msm_work_bytes(g1))
    }

    /// Device bytes of one proof of domain size `n`: (a/b/c and NTT tables, the G1 MSM
    /// allowance, configured or default).
    fn working_set(&self, n: usize) -> Result<(u64, u64)> {
        let log_n = n.trailing_zeros();
        let tables = self.ntt.table_bytes_now(log_n.max(1))? as u64;
        Ok((
            abc_bytes(n) + tables,
            self.config.msm_vram.unwrap_or(DEFAULT_MSM_VRAM),
        ))
    }

    /// Checks and evaluates `witness` into pinned memory and lays out its MSM scalars (CPU
    /// only; may run on another thread while this prover's device is busy).
    pub fn prepare(
        &self,
        params: &DeviceParameters,
        pce: &Pce,
        density: &Density,
        witness: &Witness,
    ) -> Result<PreparedWitness> {
        self.prepare_with(params, pce, density, None, witness)
    }

    /// [`GpuProver::prepare`], or, when `device_pce` is given and the parameters are
    /// resident, the witness alone laid out for a proof that evaluates and checks a, b, c on
    /// the device. Both give the same proof. `device_pce` must be `pce` placed on this
    /// prover's device ([`GpuProver::place_pce`]).
    pub fn prepare_with(
        &self,
        params: &DeviceParameters,
        pce: &Pce,
        density: &Density,
        device_pce: Option<&Arc<DevicePce>>,
        witness: &Witness,
    ) -> Result<PreparedWitness> {
        let _span = tracing::debug_span!("gpu_prepare", aux = witness.aux_len()).entered();
        match device_pce {
            Some(dp) if params.is_resident() => {
                if dp.ordinal() != self.device.ordinal() {
                    return Err(Error::wrong_device(dp.ordinal(), self.device.ordinal()));
                }
                if dp.rows() != pce.num_rows() {
                    return Err(Error::shape("device PCE rows", pce.num_rows(), dp.rows()));
                }
                prepare_for_device(&self.pool, &params.shape, dp, density, witness)
            }
            _ => prepare(&self.pool, &params.shape, pce, density, witness),
        }
    }

    /// Places `pce`'s matrices and `density`'s bitmaps on this prover's device, reserving
    /// their bytes under its budget (if any) for as long as the result lives. Fails with
    /// [`Error::PceTooLarge`] for a matrix of 2^32 entries or more (evaluate such a circuit
    /// on the host).
    pub fn place_pce(&self, pce: &Pce, density: &Density) -> Result<DevicePce> {
        let bytes = DevicePce::bytes_for(pce).ok_or_else(|| Error::PceTooLarge {
            entries: [&pce.a, &pce.b, &pce.c]
                .iter()
                .map(|m| m.nnz())
                .max()
                .unwrap_or(0),
        })?;
        let reservation = self.reserve(bytes)?;
        DevicePce::upload(&self.stream, pce, density, reservation)
    }

    /// Proves one witness with randomness `r`, `s`: [`GpuProver::prepare`] then
    /// [`GpuProver::prove_prepared`]. The proof equals the CPU reference's for the same r, s.
    pub fn prove(
        &self,
        params: &DeviceParameters,
        pce: &Pce,
        density: &Density,
        witness: &Witness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, ProofTimings)> {
        let mut prepared = self.prepare(params, pce, density, witness)?;
        self.prove_prepared(params, &mut prepared, r, s)
    }

    /// Proves several witnesses of one circuit, one `(r, s)` per witness, preparing the next
    /// witness on another thread while the device proves the current one. A failing witness
    /// stops the batch with [`Error::InBatch`] naming it.
    pub fn prove_batch(
        &self,
        params: &DeviceParameters,
        pce: &Pce,
        density: &Density,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<(Proof, ProofTimings)>> {
        if witnesses.len() != randomness.len() {
            return Err(Error::shape(
                "randomness pairs for the batch",
                witnesses.len(),
                randomness.len(),
            ));
        }
        let in_batch = |index: usize| {
            move |e: Error| Error::InBatch {
                index,
                source: Box::new(e),
            }
        };
        std::thread::scope(|scope| {
            // One prepared witness waits while the device proves another.
            let (tx, rx) = sync_channel::<Result<PreparedWitness>>(1);
            scope.spawn(move || {
                for w in witnesses {
                    let prepared = self.prepare(params, pce, density, w);
                    let failed = prepared.is_err();
                    if tx.send(prepared).is_err() || failed {
                        break;
                    }
                }
            });
            let mut out = Vec::with_capacity(witnesses.len());
            for (index, &(r, s)) in randomness.iter().enumerate() {
                let mut prepared = rx
                    .recv()
                    .expect("the preparing thread sends one result per witness until an error")
                    .map_err(in_batch(index))?;
                out.push(
                    self.prove_prepared(params, &mut prepared, r, s)
                        .map_err(in_batch(index))?,
                );
            }
            Ok(out)
        })
    }

    /// Proves a prepared witness with randomness `r`, `s`. With resident parameters the
    /// witness's pinned buffers go back to the pool during the proof, once the device has
    /// taken what it reads from them (so the next witness's preparation overlaps the rest of
    /// this proof); a witness is proved once, and again is refused ([`Error::Proved`]).
    pub fn prove_prepared(
        &self,
        params: &DeviceParameters,
        prepared: &mut PreparedWitness,
        r: Scalar,
        s: Scalar,
    ) -> Result<(Proof, ProofTimings)> {
        if params.ordinal != self.device.ordinal() {
            return Err(Error::wrong_device(params.ordinal, self.device.ordinal()));
        }
        if params.shape != prepared.shape {
            return Err(Error::shape(
                "query sizes of the parameters the witness was prepared for",
                params.shape.l,
                prepared.shape.l,
            ));
        }
        let vk = params.vk();
        check_delta(&vk.delta_g1, &vk.delta_g2)?;
        let _turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        let _span = tracing::debug_span!("gpu_prove", log_n = prepared.log_n).entered();
        let start = Instant::now();
        let n = prepared.domain_size();
        let (stage_bytes, msm_default) = self.working_set(n)?;
        let mut marks = Timeline::new(&self.device);

        let resident = params.is_resident();
        let on_device = prepared.evaluates_on_device();
        let lengths = prepared.staged()?.lengths();
        let elems = if on_device {
            params.shape.ic
        } else {
            3 * lengths.n
                + lengths.aux
                + lengths.a
                + 2 * lengths.b
                + if resident { 0 } else { lengths.n }
        };
        let mut timings = ProofTimings {
            eval_ms: prepared.eval_ms,
            scalars_ms: prepared.scalars_ms,
            resident,
            eval_on_device: on_device,
            witness_upload_bytes: (elems * std::mem::size_of::<FrRepr>()) as u64
                + prepared.packed_bytes(),
            ..ProofTimings::default()
        };
        let sums = match &params.store {
            Store::Resident(q) if on_device => self.prove_evaluating(
                params,
                q,
                prepared,
                &mut marks,
                &mut timings,
                stage_bytes,
                msm_default,
            )?,
            Store::Resident(q) => {
                let Queries {
                    h,
                    l,
                    a,
                    b_g1,
                    b_g2,
                } = &**q;
                let msm_vram = self.msm_vram(msm_default, params.bytes() + stage_bytes)?;
                let reservation = self.reserve(stage_bytes + msm_work_bytes(msm_vram))?;
                let shapes = Shapes::of(&lengths, true, Some(h));
                let configs = self.msm_configs(msm_vram, Some((&shapes, abc_bytes(n))))?;
                let config = &configs.g1;
                let bufs = prepared.buffers()?;
                let (abc, upload) = self.upload_abc(&bufs.abc, n)?;
                let l_sum = marks.span(&self.stream, "msm_l", || {
                    self.msm_g1(l, &bufs.aux, 0..bufs.lengths.aux, config)
                })?;
                let a_sum = marks.span(&self.stream, "msm_a", || {
                    self.msm_g1(a, &bufs.a, 0..bufs.lengths.a, config)
                })?;
                let b_g1_sum = marks.span(&self.stream, "msm_b_g1", || {
                    self.msm_g1(b_g1, &bufs.b, 0..bufs.lengths.b, config)
                })?;
                let b_g2_sum = marks.span(&self.stream, "msm_b_g2", || {
                    Ok::<_, Error>(
                        self.msm
                            .msm_with::<G2>(
                                &self.stream,
                                b_g2,
                                Scalars::PinnedRange(&bufs.b, 0..bufs.lengths.b),
                                &configs.g2,
                            )?
                            .0,
                    )
                })?;
                // Every read of the pinned set is queued (a, b, c's uploads) or done (the MSMs
                // above wait for their last copy from host memory): the set goes back to the
                // pool now, so the next partition's preparation overlaps the H step and msm_h
                // (its writes wait for the queued copies).
                prepared.staged = None;
                self.stream.wait(&upload.1)?;
                timings.upload_ms = f64::from(upload.0.elapsed_ms(&upload.1)?);
                let h_sum = self.h_and_free(
                    abc,
                    h,
                    config,
                    reservation,
                    &mut marks,
                    &mut timings,
                    &upload.0,
                )?;
                Sums {
                    h: h_sum,
                    l: l_sum,
                    a: a_sum,
                    b_g1: b_g1_sum,
                    b_g2: b_g2_sum,
                }
            }
            Store::Streamed(_) if on_device => return Err(Error::NotResident),
            Store::Streamed(host) => self.prove_streamed(
                host,
                prepared,
                &mut marks,
                &mut timings,
                stage_bytes,
                msm_default,
            )?,
        };
        if on_device {
            timings.eval_ms = marks.total("eval")?;
            timings.gather_ms = marks.total("gather")?;
        }
        for (name, field) in [
            ("ntt", &mut timings.ntt_ms),
            ("msm_h", &mut timings.msm_h_ms),
            ("msm_l", &mut timings.msm_l_ms),
            ("msm_a", &mut timings.msm_a_ms),
            ("msm_b_g1", &mut timings.msm_b_g1_ms),
            ("msm_b_g2", &mut timings.msm_b_g2_ms),
        ] {
            *field = marks.total(name)?;
        }
        timings.gpu_busy_ms = if on_device {
            timings.eval_ms + timings.gather_ms
        } else {
            0.0
        } + timings.ntt_ms
            + timings.msm_h_ms
            + timings.msm_l_ms
            + timings.msm_a_ms
            + timings.msm_b_g1_ms
            + timings.msm_b_g2_ms;
        let assembly = Instant::now();
        let proof = assemble(vk, &sums, r, s);
        timings.assembly_ms = assembly.elapsed().as_secs_f64() * 1e3;
        timings.prove_ms = start.elapsed().as_secs_f64() * 1e3;
        tracing::debug!(?timings, "gpu proof");
        Ok((proof, timings))
    }

    /// The resident path with a, b, c evaluated on the device (see the module docs).
    #[allow(clippy::too_many_arguments)]
    fn prove_evaluating(
        &self,
        params: &DeviceParameters,
        q: &Queries,
        prepared: &mut PreparedWitness,
        marks: &mut Timeline,
        timings: &mut ProofTimings,
        stage_bytes: u64,
        msm_default: u64,
    ) -> Result<Sums> {
        let Queries {
            h,
            l,
            a,
            b_g1,
            b_g2,
        } = q;
        let n = prepared.domain_size();
        let Some(Staged::Device(WitnessOnly {
            lengths,
            aux: aux_host,
            inputs: inputs_host,
            pce,
            splits,
        })) = &prepared.staged
        else {
            return Err(Error::Proved);
        };
        let (lengths, pce, splits) = (*lengths, Arc::clone(pce), *splits);
        if pce.ordinal() != self.device.ordinal() {
            return Err(Error::wrong_device(pce.ordinal(), self.device.ordinal()));
        }
        let ni = inputs_host.len();
        let extra = device_eval_bytes(ni, lengths.aux, lengths.a, lengths.b);
        let msm_vram = self.msm_vram(msm_default, params.bytes() + stage_bytes + extra)?;
        let reservation = self.reserve(stage_bytes + extra + msm_work_bytes(msm_vram))?;
        let shapes = Shapes::of(&lengths, false, params.h_bases());
        let configs = self.msm_configs(msm_vram, Some((&shapes, abc_bytes(n) + extra)))?;
        let config = &configs.g1;

        // The packed witness up on the copy stream; the pinned buffers go back to the pool
        // once the copies are queued (the next writer waits for them).
        let (start, end) = (self.device.new_event()?, self.device.new_event()?);
        self.copy.record(&start)?;
        let packed = DevicePacked::upload(&self.copy, &aux_host.pinned())?;
        let mut inputs = self.copy.alloc::<FrRepr>(ni.max(1))?;
        if ni > 0 {
            self.copy
                .copy_to_device(inputs_host, &mut inputs.slice_mut(..ni))?;
        }
        self.copy.record(&end)?;
        prepared.staged = None;
        let alloc = || self.stream.alloc::<FrRepr>(n);
        let mut abc = [alloc()?, alloc()?, alloc()?];
        self.stream.wait(&end)?;
        timings.upload_ms = f64::from(start.elapsed_ms(&end)?);

        let mut failing = self.stream.upload(&[ALL_SATISFIED])?;
        let mut aux = self.stream.alloc::<FrRepr>(lengths.aux.max(1))?;
        marks.span(&self.stream, "eval", || -> Result<()> {
            if lengths.aux > 0 {
                packed::unpack(&self.stream, &packed, &mut aux.slice_mut(..lengths.aux))?;
            } else {
                self.stream.zero(&mut aux)?;
            }
            let [ea, eb, ec] = &mut abc;
            sparse::eval_abc(
                &self.stream,
                [&pce.a, &pce.b, &pce.c],
                &inputs.slice(..ni),
                &aux.slice(..lengths.aux),
                [ea, eb, ec],
                &mut failing,
            )?;
            Ok(())
        })?;
        drop(packed);
        let first_failing = self.stream.download(&failing)?[0];
        if first_failing != ALL_SATISFIED {
            return Err(cuzk_groth16::Error::Unsatisfied {
                row: first_failing as usize,
            }
            .into());
        }
        let with = |split: Split| MsmConfig {
            split,
            ..configs.g1
        };
        let with_g2 = |split: Split| MsmConfig {
            split,
            ..configs.g2
        };

        let l_sum = marks.span(&self.stream, "msm_l", || {
            self.msm_device::<G1>(l, &aux, lengths.aux, &with(splits.l))
        })?;
        // A: every input, then the aux in A.
        let mut scalars = self
            .stream
            .alloc::<FrRepr>(lengths.a.max(lengths.b).max(1))?;
        marks.span(&self.stream, "gather", || -> Result<()> {
            if ni > 0 {
                self.stream
                    .copy_on_device(&inputs.slice(..ni), &mut scalars.slice_mut(..ni))?;
            }
            sparse::gather(
                &self.stream,
                &aux.slice(..lengths.aux),
                &pce.a_aux,
                &mut scalars.slice_mut(ni..lengths.a),
            )?;
            Ok(())
        })?;
        let a_sum = marks.span(&self.stream, "msm_a", || {
            self.msm_device::<G1>(a, &scalars, lengths.a, &with(splits.a))
        })?;
        // B: the inputs in B, then the aux in B.
        let split = pce.b_input.ones();
        marks.span(&self.stream, "gather", || -> Result<()> {
            sparse::gather(
                &self.stream,
                &inputs.slice(..ni),
                &pce.b_input,
                &mut scalars.slice_mut(..split),
            )?;
            sparse::gather(
                &self.stream,
                &aux.slice(..lengths.aux),
                &pce.b_aux,
                &mut scalars.slice_mut(split..lengths.b),
            )?;
            Ok(())
        })?;
        let b_g1_sum = marks.span(&self.stream, "msm_b_g1", || {
            self.msm_device::<G1>(b_g1, &scalars, lengths.b, &with(splits.b))
        })?;
        let b_g2_sum = marks.span(&self.stream, "msm_b_g2", || {
            self.msm_device::<G2>(b_g2, &scalars, lengths.b, &with_g2(splits.b))
        })?;
        drop((scalars, aux, inputs, failing));

        let h_sum = self.h_and_free(abc, h, config, reservation, marks, timings, &start)?;
        Ok(Sums {
            h: h_sum,
            l: l_sum,
            a: a_sum,
            b_g1: b_g1_sum,
            b_g2: b_g2_sum,
        })
    }

    /// The end of both resident paths: the H step on `abc` and MSM H on the device, then the
    /// proof's device buffers freed and its reservation released (after the device is done);
    /// times the free and the device span from `first` (the upload's start) to the last mark.
    #[allow(clippy::too_many_arguments)]
    fn h_and_free(
        &self,
        mut abc: [DeviceBuffer<FrRepr>; 3],
        h: &Bases<G1>,
        config: &MsmConfig,
        reservation: Option<Reservation>,
        marks: &mut Timeline,
        timings: &mut ProofTimings,
        first: &Event,
    ) -> Result<G1Projective> {
        marks.span(&self.stream, "ntt", || self.h_step(&mut abc))?;
        let h_sum = marks.span(&self.stream, "msm_h", || {
            Ok::<_, Error>(
                self.msm
                    .msm_with::<G1>(&self.stream, h, Scalars::Device(&abc[0]), config)?
                    .0,
            )
        })?;
        let free = Instant::now();
        // a, b, c were allocated on the copy stream and go back to its pool: only its
        // synchronisation hands them to the driver, where the next proof's room (an unmetered
        // lane's free memory) and a budget's ledger expect them.
        drop(abc);
        self.release_if_metered();
        self.stream.synchronize()?;
        self.copy.synchronize()?;
        drop(reservation);
        timings.free_ms = free.elapsed().as_secs_f64() * 1e3;
        timings.gpu_span_ms = f64::from(first.elapsed_ms(marks.last().expect("phases ran"))?);
        Ok(h_sum)
    }

    /// Σ scalars·bases over the first `len` scalars of a device buffer (the identity for
    /// none).
    fn msm_device<C: MsmCurve>(
        &self,
        bases: &Bases<C>,
        scalars: &DeviceBuffer<FrRepr>,
        len: usize,
        config: &MsmConfig,
    ) -> Result<C::Projective> {
        if len == 0 {
            return Ok(C::Projective::identity());
        }
        Ok(self
            .msm
            .msm_with::<C>(
                &self.stream,
                bases,
                Scalars::DeviceRange(scalars, 0..len),
                config,
            )?
            .0)
    }

    /// The streamed path (see the module docs).
    fn prove_streamed(
        &self,
        host: &PreparedParameters,
        prepared: &mut PreparedWitness,
        marks: &mut Timeline,
        timings: &mut ProofTimings,
        stage_bytes: u64,
        msm_default: u64,
    ) -> Result<Sums> {
        let n = prepared.domain_size();
        let reservation = self.reserve(stage_bytes)?;
        let upload = {
            let bufs = prepared.buffers()?;
            let (mut abc, upload) = self.upload_abc(&bufs.abc, n)?;
            self.stream.wait(&upload.1)?;
            marks.span(&self.stream, "ntt", || self.h_step(&mut abc))?;
            // h back to the host, into a's pinned buffer (a is no longer needed there).
            self.stream
                .copy_to_pinned(&abc[0], &mut prepared.buffers_mut()?.abc[0])?;
            self.stream.synchronize()?;
            drop(abc);
            self.stream.synchronize()?;
            // Freed on the copy stream, which allocated them (see `h_and_free`).
            self.copy.synchronize()?;
            upload
        };
        timings.upload_ms = f64::from(upload.0.elapsed_ms(&upload.1)?);
        drop(reservation);

        let chunk_bytes = 2 * (self.config.stream_chunk + 2 * STAGE_BYTES as u64);
        let msm_vram = self.msm_vram(msm_default, chunk_bytes)?;
        let _reservation = self.reserve(chunk_bytes + msm_work_bytes(msm_vram))?;
        let configs = self.msm_configs(msm_vram, None)?;
        let config = &configs.g1;
        let mut guard = self
            .streaming
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if guard.is_none() {
            *guard = Some(self.new_streaming()?);
        }
        let st = guard.as_mut().expect("made above");
        let bufs = prepared.buffers()?;
        let h_len = host.h().len();
        let h = marks.span(&self.stream, "msm_h", || {
            self.streamed(
                host.h(),
                &bufs.abc[0],
                0..h_len,
                &mut st.g1,
                &mut st.g1_stage,
                config,
            )
        })?;
        let l = marks.span(&self.stream, "msm_l", || {
            self.streamed(
                host.l(),
                &bufs.aux,
                0..bufs.lengths.aux,
                &mut st.g1,
                &mut st.g1_stage,
                config,
            )
        })?;
        let a = marks.span(&self.stream, "msm_a", || {
            self.streamed(
                host.a(),
                &bufs.a,
                0..bufs.lengths.a,
                &mut st.g1,
                &mut st.g1_stage,
                config,
            )
        })?;
        let b_g1 = marks.span(&self.stream, "msm_b_g1", || {
            self.streamed(
                host.b_g1(),
                &bufs.b,
                0..bufs.lengths.b,
                &mut st.g1,
                &mut st.g1_stage,
                config,
            )
        })?;
        let b_g2 = marks.span(&self.stream, "msm_b_g2", || {
            self.streamed(
                host.b_g2(),
                &bufs.b,
                0..bufs.lengths.b,
                &mut st.g2,
                &mut st.g2_stage,
                &configs.g2,
            )
        })?;
        timings.gpu_span_ms = f64::from(upload.0.elapsed_ms(marks.last().expect("phases ran"))?);
        let free = Instant::now();
        self.release_if_metered();
        timings.free_ms = free.elapsed().as_secs_f64() * 1e3;
        Ok(Sums {
            h,
            l,
            a,
            b_g1,
            b_g2,
        })
    }

    fn new_streaming(&self) -> Result<Streaming> {
        let chunk = self.config.stream_chunk as usize;
        let g1_len = (chunk / std::mem::size_of::<<G1 as MsmCurve>::AffineRepr>()).max(1);
        let g2_len = (chunk / std::mem::size_of::<<G2 as MsmCurve>::AffineRepr>()).max(1);
        let s = Streaming {
            g1: Bases::from_device(self.stream.alloc_zeroed(g1_len)?),
            g2: Bases::from_device(self.stream.alloc_zeroed(g2_len)?),
            g1_stage: Stager::new(&self.device)?,
            g2_stage: Stager::new(&self.device)?,
        };
        self.stream.synchronize()?;
        Ok(s)
    }

    /// Σ scalars·bases with the bases copied from the host through `chunk` piece by piece.
    fn streamed<P: HostPoint>(
        &self,
        host: &[P],
        scalars: &PinnedBuffer<FrRepr>,
        range: Range<usize>,
        chunk: &mut Bases<P::Curve>,
        stager: &mut Stager<<P::Curve as MsmCurve>::AffineRepr>,
        config: &MsmConfig,
    ) -> Result<<P::Curve as MsmCurve>::Projective> {
        let mut sum = <P::Curve as MsmCurve>::Projective::identity();
        let len = range.len();
        let step = chunk.len();
        for first in (0..len).step_by(step) {
            let last = (first + step).min(len);
            // Queued on the compute stream, so the copy waits for the previous MSM's reads.
            stager.copy(
                &self.stream,
                &host[first..last],
                chunk.points_mut(),
                P::repr,
            )?;
            let scalars = Scalars::PinnedRange(scalars, range.start + first..range.start + last);
            sum += self
                .msm
                .msm_with::<P::Curve>(&self.stream, chunk, scalars, config)?
                .0;
        }
        stager.finish()?;
        Ok(sum)
    }

    /// Allocates a, b, c on the device and queues their upload on the copy stream; returns
    /// the buffers and the events around the copies.
    fn upload_abc(&self, abc: &[PooledPinned<FrRepr>; 3], n: usize) -> Result<Uploaded> {
        let (start, end) = (self.device.new_event()?, self.device.new_event()?);
        let mut dev = [
            self.copy.alloc::<FrRepr>(n)?,
            self.copy.alloc::<FrRepr>(n)?,
            self.copy.alloc::<FrRepr>(n)?,
        ];
        self.copy.record(&start)?;
        for (d, h) in dev.iter_mut().zip(abc) {
            self.copy.copy_pinned_to_device(h, d)?;
        }
        self.copy.record(&end)?;
        Ok((dev, (start, end)))
    }

    /// The H step in place: `abc[0]` becomes h's coefficients (n − 1 of them, then a zero).
    fn h_step(&self, abc: &mut [DeviceBuffer<FrRepr>; 3]) -> Result<()> {
        let [a, b, c] = abc;
        let mut views = [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()];
        self.ntt.groth16_h(&self.stream, &mut views)?;
        Ok(())
    }

    fn msm_g1(
        &self,
        bases: &Bases<G1>,
        scalars: &PinnedBuffer<FrRepr>,
        range: Range<usize>,
        config: &MsmConfig,
    ) -> Result<G1Projective> {
        Ok(self
            .msm
            .msm_with::<G1>(
                &self.stream,
                bases,
                Scalars::PinnedRange(scalars, range),
                config,
            )?
            .0)
    }

    /// The G1 MSM allowance: the configured or default figure, less if the budget leaves
    /// less than its [`msm_work_bytes`] after `other` bytes of this proof.
    fn msm_vram(&self, default: u64, other: u64) -> Result<u64> {
        let mut v = default;
        if let Some(b) = &self.config.budget {
            let left = b.capacity().saturating_sub(other);
            v = v.min(g1_allowance_within(left));
            if v < MIN_MSM_VRAM {
                return Err(Error::from(cuzk_mem::MemError::ExceedsCapacity {
                    budget: b.name().to_string(),
                    requested: other + msm_work_bytes(MIN_MSM_VRAM),
                    capacity: b.capacity(),
                }));
            }
        }
        Ok(v)
    }

    /// Waits for `bytes` of the VRAM budget (if any).
    fn reserve(&self, bytes: u64) -> Result<Option<Reservation>> {
        match &self.config.budget {
            Some(b) => Ok(Some(b.reserve_blocking(bytes, None)?)),
            None => Ok(None),
        }
    }

    /// Under a budget, the MSM work buffers are freed with the reservation that covered them,
    /// so the ledger never undercounts what the device holds.
    fn release_if_metered(&self) {
        if self.config.budget.is_some() {
            self.msm.release_workspaces();
        }
    }

    /// The pinned pool the prover's witness buffers come from.
    pub fn pinned_pool(&self) -> &PinnedPool {
        &self.pool
    }

    /// Frees the idle pinned witness buffers and the cached device work buffers, and gives
    /// the device memory kept for reuse back to the driver.
    pub fn release_buffers(&self) {
        self.pool.trim();
        self.msm.release_workspaces();
        *self
            .streaming
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        if let Err(e) = self.device.trim_freed_memory() {
            tracing::warn!(device = self.device.ordinal(), error = %e, "kept device memory not trimmed");
        }
    }
}
