//! The CUDA engine: in-place NTTs of device vectors of `FrRepr` on a caller's stream, with
//! twiddle tables built once per size and direction and kept on the device.
//!
//! Every transform takes and returns natural order. Internally a forward transform is a
//! bit reversal followed by the DIT passes and an inverse one the DIF passes followed by a bit
//! reversal (see [`crate::plan`]); scalings by `1/n` and by powers of the coset generator ride
//! on the first or last pass, so they cost no extra trip through memory. The Groth16 H step
//! chains DIF into DIT with no reordering between them and reverses bits once, at the end,
//! where it also subtracts C's part (which never goes to the coset).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuzk_cuda::Device;
//! use cuzk_field::FrRepr;
//! use cuzk_ntt::gpu::NttEngine;
//! let device = Device::open(0)?;
//! let stream = device.new_stream()?;
//! let engine = NttEngine::new(&device)?;
//! let mut a = stream.upload(&vec![FrRepr::default(); 1 << 20])?;
//! engine.ntt(&stream, &mut [a.as_view_mut()])?; // evaluations of a on ⟨ω⟩
//! engine.intt(&stream, &mut [a.as_view_mut()])?; // and back
//! # Ok(()) }
//! ```

mod launch;

use crate::plan::{
    auto_elems_log, Direction, Pass, PassTables, Plan, Scale, SplitTable, BLOCK_ELEMS_LOG,
    DIRECT_FACTOR_MAX_LOG, ELEMS_PER_THREAD_LOG, MAX_LOG_N, MAX_PASS_BITS,
    MIN_ELEMS_PER_THREAD_LOG, MIN_LOG_N,
};
use crate::NttError;
use cuzk_cuda::{CudaError, Device, DeviceBuffer, DeviceViewMut, Kernel, Stream, Timeline};
use cuzk_field::consts::COSET_GENERATOR;
use cuzk_field::{Field, FrRepr, Scalar};
use launch::{Kernels, ScaleArgs, VECTORS_PER_LAUNCH};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Which scaling a transform applies, each with its own cached tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ScaleKind {
    /// No scaling.
    None,
    /// `1/n` (inverse transforms).
    InvN,
    /// `g^i` on coefficient i (coset forward transforms).
    Coset,
    /// `g^-i / n` on coefficient i (coset inverse transforms).
    CosetInv,
    /// `g^i / n`: the H step's inverse transform straight onto the coset.
    HToCoset,
    /// `g^-i / (n · Z)`: the H step's way back, with the division by `Z = g^n − 1`.
    HFromCoset,
    /// `1 / (n · Z)`: the H step's inverse transform of C, to its coefficients over Z.
    InvNZ,
}

/// A pass factor or scale table on the device.
struct DeviceSplit {
    lo: DeviceBuffer<FrRepr>,
    hi: Option<DeviceBuffer<FrRepr>>,
    lo_bits: u32,
}

struct DevicePassTables {
    local_roots: DeviceBuffer<FrRepr>,
    factor: Option<DeviceSplit>,
}

/// The twiddle tables of every pass of one size and direction.
pub(crate) struct DeviceTables {
    log_n: u32,
    passes: Vec<Pass>,
    pass_tables: Vec<DevicePassTables>,
}

/// A scale on the device: a constant (`lo` has one element) or split powers.
struct DeviceScale {
    flags: u32,
    table: Option<DeviceSplit>,
}

/// The operations [`NttEngine::arith`] checks and measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// Montgomery multiplication.
    Mul,
    /// Modular addition.
    Add,
    /// Modular subtraction.
    Sub,
}

/// Whose arithmetic [`NttEngine::arith`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithCode {
    /// The NTT's own, specialised to r (kernels/field/fr_arith.cuh).
    Ntt,
    /// The generic field code every other kernel uses (kernels/field).
    Generic,
    /// The NTT passes' lazily reduced form (kernels/field/fr_arith.cuh: `mul_lazy`, `add_2r`,
    /// `sub_2r`): `a` below 2r, `b` below r for the product and below 2r otherwise, every
    /// intermediate below 2r, the result reduced.
    Lazy,
    /// [`ArithCode::Lazy`] with the product on the FP64 pipe (kernels/field/fr_f64.cuh: five
    /// 52-bit limbs split by fused multiply-adds); sums and differences are `Lazy`'s. Fast only
    /// on GPUs with full-rate FP64 (sm_80, sm_90).
    Fp64,
    /// Two independent chains of [`ArithCode::Lazy`] products a thread (a measure of what more
    /// independent work a thread gives); sums and differences are `Lazy`'s.
    LazyTwice,
    /// Two independent chains of [`ArithCode::Fp64`] products a thread.
    Fp64Twice,
    /// One chain of [`ArithCode::Lazy`] and one of [`ArithCode::Fp64`] products a thread: both
    /// pipes at once.
    LazyAndFp64,
    /// [`ArithCode::Fp64`] with `b` split into the FP64 limbs once, outside the chain: what
    /// twiddle tables held as limbs would save.
    Fp64Split,
}

impl ArithCode {
    /// Every code, in the order `cuzk-bench ntt` measures them.
    pub const ALL: [ArithCode; 8] = [
        ArithCode::Ntt,
        ArithCode::Lazy,
        ArithCode::Fp64,
        ArithCode::Fp64Split,
        ArithCode::LazyTwice,
        ArithCode::Fp64Twice,
        ArithCode::LazyAndFp64,
        ArithCode::Generic,
    ];

    /// Products a thread computes for each of `arith`'s `iters`.
    pub fn products_per_iter(self) -> u32 {
        match self {
            ArithCode::LazyTwice | ArithCode::Fp64Twice | ArithCode::LazyAndFp64 => 2,
            _ => 1,
        }
    }
}

/// `NttEngine::elems_log` when the plan chooses per pass.
const AUTO_ELEMS: u32 = 0;

/// What a set of twiddle tables is built for: (log_n, direction, block_log, the bound on
/// directly tabulated pass factors).
type TablesKey = (u32, Direction, u32, u32);

/// NTTs on one device. Cheap to share (`&self` methods, internally locked caches); transforms
/// are queued on the caller's stream and return without waiting for the device.
pub struct NttEngine {
    device: Device,
    kernels: Kernels,
    sm_count: u32,
    /// Twiddle tables per size, direction and settings, built on first use.
    tables: Mutex<HashMap<TablesKey, Arc<DeviceTables>>>,
    /// Scale tables per (log_n, kind).
    scales: Mutex<HashMap<(u32, ScaleKind), Arc<DeviceScale>>>,
    /// Blocks per SM of the pass kernels, per (dit, elements per thread, threads per block,
    /// shared memory).
    occupancy: Mutex<HashMap<(bool, u32, u32, u32), u32>>,
    /// log2 of the elements a pass block holds (plan::Plan::with_block_log).
    block_log: AtomicU32,
    /// Pass factors of order up to 2^this come from one table (plan::PassTables::with_direct_log).
    direct_factor_log: AtomicU32,
    /// log2 of the elements each pass thread holds (plan::Pass::elems_log), or AUTO_ELEMS for
    /// plan::auto_elems_log's choice per pass.
    elems_log: AtomicU32,
    /// A one-element buffer passed for table and vector slots a launch does not use.
    dummy: DeviceBuffer<FrRepr>,
}

impl fmt::Debug for NttEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NttEngine")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Entries are inserted whole, so a panic while locked leaves the maps consistent.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl NttEngine {
    /// An engine for `device`, loading its kernels from the device's kernel image.
    pub fn new(device: &Device) -> Result<Self, NttError> {
        let kernels = Kernels::load(device)?;
        let stream = device.new_stream()?;
        let dummy = stream.alloc_zeroed::<FrRepr>(1)?;
        stream.synchronize()?;
        Ok(NttEngine {
            device: device.clone(),
            kernels,
            sm_count: device.info().sm_count.max(1),
            tables: Mutex::new(HashMap::new()),
            scales: Mutex::new(HashMap::new()),
            occupancy: Mutex::new(HashMap::new()),
            block_log: AtomicU32::new(BLOCK_ELEMS_LOG),
            direct_factor_log: AtomicU32::new(DIRECT_FACTOR_MAX_LOG),
            elems_log: AtomicU32::new(AUTO_ELEMS),
            dummy,
        })
    }

    /// The device this engine runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Chooses how many elements a pass block holds: `2^block_log`, 10 or 11 (the default):
    /// blocks of 128 or 256 threads. Both compute the same results; on the H200 the smaller
    /// blocks measured 10–17% slower at 2^24–2^27, so the default stays 11.
    pub fn set_block_log(&self, block_log: u32) -> Result<(), NttError> {
        if !(MAX_PASS_BITS..=BLOCK_ELEMS_LOG).contains(&block_log) {
            return Err(NttError::BlockSize {
                block_log,
                min: MAX_PASS_BITS,
                max: BLOCK_ELEMS_LOG,
            });
        }
        self.block_log.store(block_log, Ordering::Relaxed);
        Ok(())
    }

    /// Chooses how many elements each thread of every pass holds: `Some(3)` (8 elements, 128
    /// registers, 16 warps per SM), `Some(2)` (4 elements in about 80 registers, 24 warps per
    /// SM, blocks of at most 2^10 elements, twice the shared-memory exchanges), or `None` (the
    /// default: [`auto_elems_log`]'s choice per pass). All compute the same results.
    pub fn set_elems_log(&self, elems_log: Option<u32>) -> Result<(), NttError> {
        let value = match elems_log {
            None => AUTO_ELEMS,
            Some(e) if (MIN_ELEMS_PER_THREAD_LOG..=ELEMS_PER_THREAD_LOG).contains(&e) => e,
            Some(e) => {
                return Err(NttError::ElemsPerThread {
                    elems_log: e,
                    min: MIN_ELEMS_PER_THREAD_LOG,
                    max: ELEMS_PER_THREAD_LOG,
                })
            }
        };
        self.elems_log.store(value, Ordering::Relaxed);
        Ok(())
    }

    /// Pass `p` of a size-`2^log_n` plan in the shape its kernel runs, and that kernel.
    fn shaped(&self, p: &Pass, log_n: u32, dit: bool) -> (Pass, &Kernel) {
        let e = match self.elems_log.load(Ordering::Relaxed) {
            AUTO_ELEMS => auto_elems_log(p.bits, dit),
            e => e,
        };
        let block_log = self.block_log.load(Ordering::Relaxed);
        let kernel = match (dit, e == ELEMS_PER_THREAD_LOG) {
            (false, true) => &self.kernels.dif,
            (false, false) => &self.kernels.dif4,
            (true, true) => &self.kernels.dit,
            (true, false) => &self.kernels.dit4,
        };
        (p.with_elems_log(log_n, block_log, e), kernel)
    }

    /// Chooses up to which order `2^log` pass factors come from one table instead of the
    /// product of two (default [`DIRECT_FACTOR_MAX_LOG`]). A larger bound saves one
    /// multiplication per element in the passes above it, for a table of `2^s_hi` elements
    /// per such pass and direction: at `log = log_n` the top pass's table is as large as the
    /// vector ([`NttEngine::table_bytes_now`] counts it). Results are the same either way.
    pub fn set_direct_factor_log(&self, log: u32) -> Result<(), NttError> {
        if log > MAX_LOG_N {
            return Err(NttError::DirectFactorLog {
                log,
                max: MAX_LOG_N,
            });
        }
        self.direct_factor_log.store(log, Ordering::Relaxed);
        // Tables built under another bound are dropped (once no transform holds them), so
        // what the engine keeps is what `table_bytes_now` counts.
        lock(&self.tables).retain(|key, _| key.3 == log);
        Ok(())
    }

    /// Coefficients to evaluations on `⟨ω⟩`, in place, for every vector (all of one
    /// power-of-two length, 2^1 … 2^28).
    pub fn ntt(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span = tracing::debug_span!("ntt", log_n, vectors = vectors.len()).entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.bit_reverse(stream, chunk, log_n)?;
            self.dit(stream, chunk, log_n, Direction::Forward, ScaleKind::None)?;
        }
        Ok(())
    }

    /// Evaluations on `⟨ω⟩` to coefficients, in place: the inverse of [`NttEngine::ntt`].
    pub fn intt(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span = tracing::debug_span!("intt", log_n, vectors = vectors.len()).entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.dif(stream, chunk, log_n, Direction::Inverse, ScaleKind::InvN)?;
            self.bit_reverse(stream, chunk, log_n)?;
        }
        Ok(())
    }

    /// Coefficients to evaluations on `⟨ω⟩` left in bit-reversed order (position `i` holds the
    /// evaluation at `ω^rev(i)`), in place: [`NttEngine::ntt`] without its bit reversal, for
    /// callers that take the evaluations in that order (the DIF network alone).
    pub fn ntt_to_bit_reversed(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span =
            tracing::debug_span!("ntt_to_bit_reversed", log_n, vectors = vectors.len()).entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.dif(stream, chunk, log_n, Direction::Forward, ScaleKind::None)?;
        }
        Ok(())
    }

    /// Evaluations on `⟨ω⟩` in bit-reversed order to coefficients in natural order, in place:
    /// the inverse of [`NttEngine::ntt_to_bit_reversed`], [`NttEngine::intt`] without its bit
    /// reversal (the DIT network alone).
    pub fn intt_from_bit_reversed(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span = tracing::debug_span!("intt_from_bit_reversed", log_n, vectors = vectors.len())
            .entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.dit(stream, chunk, log_n, Direction::Inverse, ScaleKind::InvN)?;
        }
        Ok(())
    }

    /// Coefficients to evaluations on the coset `g·⟨ω⟩` (g = 7), in place.
    pub fn coset_ntt(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span = tracing::debug_span!("coset_ntt", log_n, vectors = vectors.len()).entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.bit_reverse(stream, chunk, log_n)?;
            self.dit(stream, chunk, log_n, Direction::Forward, ScaleKind::Coset)?;
        }
        Ok(())
    }

    /// Evaluations on the coset `g·⟨ω⟩` to coefficients, in place: the inverse of
    /// [`NttEngine::coset_ntt`].
    pub fn coset_intt(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(vectors)?;
        let _span = tracing::debug_span!("coset_intt", log_n, vectors = vectors.len()).entered();
        for chunk in vectors.chunks_mut(VECTORS_PER_LAUNCH) {
            self.dif(
                stream,
                chunk,
                log_n,
                Direction::Inverse,
                ScaleKind::CosetInv,
            )?;
            self.bit_reverse(stream, chunk, log_n)?;
        }
        Ok(())
    }

    /// The Groth16 quotient step. `abc` holds the evaluations of A, B and C on `⟨ω⟩`; on return
    /// `abc[0]` holds the coefficients of `H = (A·B − C)/Z`, evaluated on the coset where Z is
    /// the constant `g^n − 1`; `abc[1]` holds scratch (B's evaluations on the coset) and
    /// `abc[2]` C's coefficients divided by Z, in bit-reversed order. The same as iNTT ×3,
    /// coset NTT ×3, `(a·b − c)/Z` and a coset iNTT, in six transforms instead of seven: the
    /// coset iNTT is linear and undoes the coset NTT, so C's part of the result is its own
    /// coefficients over Z, subtracted after the last transform instead of on the coset. The
    /// bit reversals and scalings are folded away, the subtraction into the final bit reversal.
    pub fn groth16_h(
        &self,
        stream: &Stream,
        abc: &mut [DeviceViewMut<'_, FrRepr>; 3],
    ) -> Result<(), NttError> {
        let log_n = check_lengths(abc)?;
        let _span = tracing::debug_span!("groth16_h", log_n).entered();
        self.groth16_h_marked(stream, abc, log_n, &mut None)
    }

    /// Runs [`NttEngine::ntt`] (or [`NttEngine::groth16_h`] when `abc` has three vectors) with
    /// an event after every kernel and returns each kernel's device time in milliseconds: the
    /// breakdown behind the benchmark's totals. Waits for the device.
    pub fn profile(
        &self,
        stream: &Stream,
        abc: &mut [DeviceViewMut<'_, FrRepr>],
    ) -> Result<Vec<(String, f32)>, NttError> {
        let log_n = check_lengths(abc)?;
        let mut timeline = Timeline::new(stream.device());
        // The first mark: where the first kernel's interval starts.
        timeline.after(stream, "")?;
        let mut marks = Some(timeline);
        if abc.len() == 3 {
            let abc: &mut [DeviceViewMut<'_, FrRepr>; 3] = abc.try_into().expect("three vectors");
            self.groth16_h_marked(stream, abc, log_n, &mut marks)?;
        } else {
            for chunk in abc.chunks_mut(VECTORS_PER_LAUNCH) {
                self.bit_reverse(stream, chunk, log_n)?;
                mark(&mut marks, stream, || "bit reversal".into())?;
                self.dit_marked(
                    stream,
                    chunk,
                    log_n,
                    Direction::Forward,
                    ScaleKind::None,
                    &mut marks,
                )?;
            }
        }
        let timeline = marks.expect("started above");
        Ok(timeline
            .phases()?
            .into_iter()
            .map(|(label, ms)| (label.to_string(), ms))
            .collect())
    }

    /// Builds (if not yet cached) every table the transforms of size `2^log_n` use, so that
    /// the first transform of that size does not pay for it.
    pub fn prepare(&self, stream: &Stream, log_n: u32) -> Result<(), NttError> {
        Plan::new(log_n)?;
        for d in [Direction::Forward, Direction::Inverse] {
            self.tables(stream, log_n, d)?;
        }
        use ScaleKind::*;
        for kind in [InvN, Coset, CosetInv, HToCoset, HFromCoset, InvNZ] {
            self.scale(stream, log_n, kind)?;
        }
        Ok(())
    }

    /// Device memory the tables of size `2^log_n` take, both directions and every scaling,
    /// with the default bound on direct pass-factor tables.
    pub fn table_bytes(log_n: u32) -> Result<usize, NttError> {
        Self::table_bytes_for(log_n, DIRECT_FACTOR_MAX_LOG)
    }

    /// [`NttEngine::table_bytes`] with this engine's bound on direct pass-factor tables
    /// ([`NttEngine::set_direct_factor_log`]).
    pub fn table_bytes_now(&self, log_n: u32) -> Result<usize, NttError> {
        Self::table_bytes_for(log_n, self.direct_factor_log.load(Ordering::Relaxed))
    }

    fn table_bytes_for(log_n: u32, direct_log: u32) -> Result<usize, NttError> {
        let plan = Plan::new(log_n)?;
        let elems = |bits: u32, direct: u32| -> usize {
            if bits <= direct {
                1 << bits
            } else {
                (1 << bits.div_ceil(2)) + (1 << (bits - bits.div_ceil(2)))
            }
        };
        let per_direction: usize = plan
            .passes()
            .iter()
            .map(|p| {
                let factor = if p.has_factor() {
                    elems(p.s_hi(), direct_log)
                } else {
                    0
                };
                (1 << p.bits) + factor
            })
            .sum();
        // Four tables of powers and two constants.
        let scales = 4 * elems(log_n, 0) + 2;
        Ok((2 * per_direction + scales) * std::mem::size_of::<FrRepr>())
    }

    /// Queues `out[i] = a[i] ∘ b[i]`, the operation applied `iters` times (`x ← x ∘ b[i]`), by
    /// the NTT's specialised arithmetic or the generic field code: the check that the two agree
    /// with blstrs, and the measure of what a multiplication costs.
    pub fn arith(
        &self,
        stream: &Stream,
        (op, code): (ArithOp, ArithCode),
        a: &DeviceBuffer<FrRepr>,
        b: &DeviceBuffer<FrRepr>,
        out: &mut DeviceBuffer<FrRepr>,
        iters: u32,
    ) -> Result<(), NttError> {
        for (index, len) in [(1, b.len()), (2, out.len())] {
            if len != a.len() {
                return Err(NttError::LengthMismatch {
                    index,
                    expected: a.len(),
                    got: len,
                });
            }
        }
        let which = match (op, code) {
            (ArithOp::Mul, ArithCode::Ntt) => 0,
            (ArithOp::Add, ArithCode::Ntt) => 1,
            (ArithOp::Sub, ArithCode::Ntt) => 2,
            (ArithOp::Mul, ArithCode::Generic) => 3,
            (ArithOp::Add, ArithCode::Generic) => 4,
            (ArithOp::Sub, ArithCode::Generic) => 5,
            (ArithOp::Mul, ArithCode::Lazy) => 7,
            (ArithOp::Add, ArithCode::Lazy) => 8,
            (ArithOp::Sub, ArithCode::Lazy) => 9,
            (ArithOp::Mul, ArithCode::Fp64) => 10,
            (ArithOp::Mul, ArithCode::LazyTwice) => 11,
            (ArithOp::Mul, ArithCode::Fp64Twice) => 12,
            (ArithOp::Mul, ArithCode::LazyAndFp64) => 13,
            (ArithOp::Mul, ArithCode::Fp64Split) => 14,
            (
                ArithOp::Add,
                ArithCode::Fp64
                | ArithCode::Fp64Split
                | ArithCode::LazyTwice
                | ArithCode::Fp64Twice
                | ArithCode::LazyAndFp64,
            ) => 8,
            (
                ArithOp::Sub,
                ArithCode::Fp64
                | ArithCode::Fp64Split
                | ArithCode::LazyTwice
                | ArithCode::Fp64Twice
                | ArithCode::LazyAndFp64,
            ) => 9,
        };
        launch::arith(
            stream,
            &self.kernels.arith,
            out,
            a,
            b,
            which,
            iters,
            self.sm_count,
        )
    }

    /// [`NttEngine::groth16_h`] with a mark after every kernel when profiling.
    fn groth16_h_marked(
        &self,
        stream: &Stream,
        abc: &mut [DeviceViewMut<'_, FrRepr>; 3],
        log_n: u32,
        marks: &mut Option<Timeline>,
    ) -> Result<(), NttError> {
        let (ab, c) = abc.split_at_mut(2);
        // a and b straight onto the coset (bit-reversed), C to its coefficients over Z.
        self.dif_marked(
            stream,
            ab,
            log_n,
            Direction::Inverse,
            ScaleKind::HToCoset,
            marks,
        )?;
        self.dif_marked(
            stream,
            c,
            log_n,
            Direction::Inverse,
            ScaleKind::InvNZ,
            marks,
        )?;
        // The coset evaluations of A and B, natural order.
        self.dit_marked(
            stream,
            ab,
            log_n,
            Direction::Forward,
            ScaleKind::None,
            marks,
        )?;
        let [a, b] = ab else {
            unreachable!("split at 2 of 3")
        };
        launch::h_product(stream, &self.kernels.h_product, a, b, self.sm_count)?;
        mark(marks, stream, || "h product".into())?;
        // coset_iNTT(A·B)/Z, bit-reversed; minus C/Z, into natural order.
        let h = std::slice::from_mut(a);
        self.dif_marked(
            stream,
            h,
            log_n,
            Direction::Inverse,
            ScaleKind::HFromCoset,
            marks,
        )?;
        launch::h_finish(stream, &self.kernels, a, &mut c[0], log_n, self.sm_count)?;
        mark(marks, stream, || "h finish (a - c, bit reversal)".into())
    }

    fn dif(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
        log_n: u32,
        direction: Direction,
        scale: ScaleKind,
    ) -> Result<(), NttError> {
        self.dif_marked(stream, vectors, log_n, direction, scale, &mut None)
    }

    fn dif_marked(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
        log_n: u32,
        direction: Direction,
        scale: ScaleKind,
        marks: &mut Option<Timeline>,
    ) -> Result<(), NttError> {
        let tables = self.tables(stream, log_n, direction)?;
        let scale = self.scale(stream, log_n, scale)?;
        if log_n < 3 {
            return launch::tiny(
                stream,
                &self.kernels.tiny,
                vectors,
                &tables,
                false,
                &self.scale_args(&scale),
                &self.dummy,
            );
        }
        for (i, p) in tables.passes.iter().enumerate() {
            // The output scale rides on the last pass.
            let args = if p.s_lo == 0 {
                self.scale_args(&scale)
            } else {
                self.no_scale()
            };
            let (p, kernel) = &self.shaped(p, log_n, false);
            let grid = self.grid_x(kernel, false, p)?;
            launch::pass(
                stream,
                kernel,
                vectors,
                &tables,
                i,
                p,
                &args,
                &self.dummy,
                grid,
            )?;
            mark(marks, stream, || {
                format!(
                    "dif pass bits {}..{} ({} blocks of {})",
                    p.s_lo,
                    p.s_hi(),
                    grid.min(1 << (log_n - p.bits - p.log_lines_per_block)),
                    p.threads_per_block()
                )
            })?;
        }
        Ok(())
    }

    fn dit(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
        log_n: u32,
        direction: Direction,
        scale: ScaleKind,
    ) -> Result<(), NttError> {
        self.dit_marked(stream, vectors, log_n, direction, scale, &mut None)
    }

    fn dit_marked(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
        log_n: u32,
        direction: Direction,
        scale: ScaleKind,
        marks: &mut Option<Timeline>,
    ) -> Result<(), NttError> {
        let tables = self.tables(stream, log_n, direction)?;
        let scale = self.scale(stream, log_n, scale)?;
        if log_n < 3 {
            return launch::tiny(
                stream,
                &self.kernels.tiny,
                vectors,
                &tables,
                true,
                &self.scale_args(&scale),
                &self.dummy,
            );
        }
        for (i, p) in tables.passes.iter().enumerate().rev() {
            // The input scale rides on the first DIT pass, the one over the lowest bits.
            let args = if p.s_lo == 0 {
                self.scale_args(&scale)
            } else {
                self.no_scale()
            };
            let (p, kernel) = &self.shaped(p, log_n, true);
            let grid = self.grid_x(kernel, true, p)?;
            launch::pass(
                stream,
                kernel,
                vectors,
                &tables,
                i,
                p,
                &args,
                &self.dummy,
                grid,
            )?;
            mark(marks, stream, || {
                format!(
                    "dit pass bits {}..{} ({} blocks of {})",
                    p.s_lo,
                    p.s_hi(),
                    grid.min(1 << (log_n - p.bits - p.log_lines_per_block)),
                    p.threads_per_block()
                )
            })?;
        }
        Ok(())
    }

    fn bit_reverse(
        &self,
        stream: &Stream,
        vectors: &mut [DeviceViewMut<'_, FrRepr>],
        log_n: u32,
    ) -> Result<(), NttError> {
        launch::bit_reverse(
            stream,
            &self.kernels,
            vectors,
            log_n,
            &self.dummy,
            self.sm_count,
        )
    }

    fn no_scale(&self) -> ScaleArgs<'_> {
        ScaleArgs {
            flags: 0,
            lo_bits: 0,
            lo: &self.dummy,
            hi: &self.dummy,
        }
    }

    fn scale_args<'a>(&'a self, scale: &'a DeviceScale) -> ScaleArgs<'a> {
        match &scale.table {
            None => self.no_scale(),
            Some(t) => ScaleArgs {
                flags: scale.flags,
                lo_bits: t.lo_bits,
                lo: &t.lo,
                hi: t.hi.as_ref().unwrap_or(&self.dummy),
            },
        }
    }

    /// Blocks in x of a persistent pass launch: as many as fit on the device at once.
    fn grid_x(&self, kernel: &Kernel, dit: bool, pass: &Pass) -> Result<u32, NttError> {
        let (threads, smem) = (pass.threads_per_block(), 32 * pass.block_elems());
        let mut occ = lock(&self.occupancy);
        let key = (dit, pass.elems_log, threads, smem);
        let per_sm = match occ.get(&key) {
            Some(&n) => n,
            None => {
                let n = kernel
                    .max_active_blocks_per_sm(threads, smem as usize)?
                    .max(1);
                occ.insert(key, n);
                n
            }
        };
        Ok(per_sm * self.sm_count)
    }

    fn tables(
        &self,
        stream: &Stream,
        log_n: u32,
        direction: Direction,
    ) -> Result<Arc<DeviceTables>, NttError> {
        let block_log = self.block_log.load(Ordering::Relaxed);
        let direct_log = self.direct_factor_log.load(Ordering::Relaxed);
        let key = (log_n, direction, block_log, direct_log);
        if let Some(t) = lock(&self.tables).get(&key) {
            return Ok(t.clone());
        }
        let plan = Plan::with_block_log(log_n, block_log)?;
        let mut pass_tables = Vec::new();
        for p in plan.passes() {
            let host = PassTables::with_direct_log(p, direction, direct_log);
            let local_roots = self.upload(stream, &host.local_roots)?;
            let factor = host
                .factor
                .map(|f| self.upload_split(stream, &f))
                .transpose()?;
            pass_tables.push(DevicePassTables {
                local_roots,
                factor,
            });
        }
        let tables = Arc::new(DeviceTables {
            log_n,
            passes: plan.passes().to_vec(),
            pass_tables,
        });
        lock(&self.tables).insert(key, tables.clone());
        Ok(tables)
    }

    fn scale(
        &self,
        stream: &Stream,
        log_n: u32,
        kind: ScaleKind,
    ) -> Result<Arc<DeviceScale>, NttError> {
        if let Some(s) = lock(&self.scales).get(&(log_n, kind)) {
            return Ok(s.clone());
        }
        let n_inv = Scalar::from(1u64 << log_n).invert().unwrap();
        let g = COSET_GENERATOR;
        let g_inv = g.invert().unwrap();
        let z_inv = (g.pow_vartime([1u64 << log_n]) - Scalar::ONE)
            .invert()
            .unwrap();
        let host = match kind {
            ScaleKind::None => Scale::None,
            ScaleKind::InvN => Scale::Constant(n_inv.into()),
            ScaleKind::Coset => Scale::powers(g, Scalar::ONE, log_n),
            ScaleKind::CosetInv => Scale::powers(g_inv, n_inv, log_n),
            ScaleKind::HToCoset => Scale::powers(g, n_inv, log_n),
            ScaleKind::HFromCoset => Scale::powers(g_inv, n_inv * z_inv, log_n),
            ScaleKind::InvNZ => Scale::Constant((n_inv * z_inv).into()),
        };
        let scale = match host {
            Scale::None => DeviceScale {
                flags: 0,
                table: None,
            },
            Scale::Constant(c) => DeviceScale {
                flags: launch::FLAG_SCALE_CONST,
                table: Some(DeviceSplit {
                    lo: self.upload(stream, &[c])?,
                    hi: None,
                    lo_bits: 0,
                }),
            },
            Scale::Powers(t) => DeviceScale {
                flags: launch::FLAG_SCALE_POWERS,
                table: Some(self.upload_split(stream, &t)?),
            },
        };
        let scale = Arc::new(scale);
        lock(&self.scales).insert((log_n, kind), scale.clone());
        Ok(scale)
    }

    fn upload_split(&self, stream: &Stream, t: &SplitTable) -> Result<DeviceSplit, NttError> {
        let lo = self.upload(stream, &t.lo)?;
        let hi = if t.is_direct() {
            None
        } else {
            Some(self.upload(stream, &t.hi)?)
        };
        Ok(DeviceSplit {
            lo,
            hi,
            lo_bits: t.lo_bits,
        })
    }

    /// Uploads a table, naming a lack of device memory as such.
    fn upload(&self, stream: &Stream, host: &[FrRepr]) -> Result<DeviceBuffer<FrRepr>, NttError> {
        stream
            .upload(host)
            .map_err(|e| self.memory_error(e, "NTT twiddle tables", std::mem::size_of_val(host)))
    }

    fn memory_error(&self, e: CudaError, what: &'static str, needed: usize) -> NttError {
        if e.is_out_of_memory() {
            let free = self.device.memory_info().map(|(free, _)| free).unwrap_or(0);
            NttError::OutOfDeviceMemory { what, needed, free }
        } else {
            e.into()
        }
    }
}

/// Names the kernel just queued on `stream`, when profiling.
fn mark(
    marks: &mut Option<Timeline>,
    stream: &Stream,
    label: impl FnOnce() -> String,
) -> Result<(), NttError> {
    if let Some(t) = marks {
        t.after(stream, label())?;
    }
    Ok(())
}

/// The common log2 length of a batch: non-empty, all one length, a power of two in range.
fn check_lengths(vectors: &[DeviceViewMut<'_, FrRepr>]) -> Result<u32, NttError> {
    let lens: Vec<usize> = vectors.iter().map(|v| v.len()).collect();
    check_lens(&lens)
}

fn check_lens(lens: &[usize]) -> Result<u32, NttError> {
    let Some(&len) = lens.first() else {
        return Err(NttError::EmptyBatch);
    };
    if let Some((index, &got)) = lens.iter().enumerate().find(|(_, &l)| l != len) {
        return Err(NttError::LengthMismatch {
            index,
            expected: len,
            got,
        });
    }
    let log_n = crate::cpu::log2_exact(len)?;
    if log_n < MIN_LOG_N {
        return Err(NttError::TooSmall {
            log_n,
            min: MIN_LOG_N,
        });
    }
    if log_n > MAX_LOG_N {
        return Err(NttError::TooLarge {
            log_n,
            max: MAX_LOG_N,
        });
    }
    Ok(log_n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_validated_with_the_offending_value() {
        assert!(matches!(check_lens(&[]), Err(NttError::EmptyBatch)));
        assert!(matches!(
            check_lens(&[8, 8, 4]),
            Err(NttError::LengthMismatch {
                index: 2,
                expected: 8,
                got: 4
            })
        ));
        assert!(matches!(
            check_lens(&[12]),
            Err(NttError::NotPowerOfTwo { len: 12 })
        ));
        assert!(matches!(
            check_lens(&[1]),
            Err(NttError::TooSmall { log_n: 0, min: 1 })
        ));
        assert!(matches!(
            check_lens(&[1 << 29]),
            Err(NttError::TooLarge { log_n: 29, max: 28 })
        ));
        assert_eq!(check_lens(&[1 << 20, 1 << 20]).unwrap(), 20);
        let msg = NttError::LengthMismatch {
            index: 2,
            expected: 8,
            got: 4,
        }
        .to_string();
        assert!(
            msg.contains("vector 2") && msg.contains('4') && msg.contains('8'),
            "{msg}"
        );
    }

    #[test]
    fn direct_factor_tables_are_counted() {
        // 2^27 splits 9 + 9 + 9: with every factor direct, the top pass's table holds 2^27
        // entries instead of 2^14 + 2^13, per direction (the middle pass's is direct already).
        let split = NttEngine::table_bytes_for(27, DIRECT_FACTOR_MAX_LOG).unwrap();
        let direct = NttEngine::table_bytes_for(27, MAX_LOG_N).unwrap();
        let top = (1usize << 27) - ((1 << 14) + (1 << 13));
        assert_eq!(direct - split, 2 * top * std::mem::size_of::<FrRepr>());
        assert_eq!(NttEngine::table_bytes(27).unwrap(), split);
        // Up to 2^20 every factor is direct already.
        assert_eq!(
            NttEngine::table_bytes_for(20, MAX_LOG_N).unwrap(),
            NttEngine::table_bytes(20).unwrap()
        );
    }

    #[test]
    fn table_memory_stays_small() {
        // Both directions and every scaling of a 2^27 transform: about 18 MiB.
        let bytes = NttEngine::table_bytes(27).unwrap();
        assert!(bytes < 24 << 20, "{bytes}");
        assert!(NttEngine::table_bytes(20).unwrap() < 72 << 20);
    }
}
