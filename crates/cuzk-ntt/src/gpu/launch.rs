//! Every launch of the `cuzk_ntt_*` kernels (kernels/ntt/ntt.cu), and nothing else: the only
//! `unsafe` in the crate, each block checked against the kernel's signature.
#![allow(unsafe_code)] // Kernel launches are unsafe by nature; each one states why it is sound.

use super::DeviceTables;
use crate::plan::Pass;
use crate::NttError;
use bytemuck::{Pod, Zeroable};
use cuzk_cuda::{DeviceBuffer, DeviceViewMut, Kernel, LaunchConfig, Stream};
use cuzk_field::FrRepr;

/// Most vectors one launch transforms (the kernels take three vector pointers).
pub(super) const VECTORS_PER_LAUNCH: usize = 3;

/// Mirrors `cuzk::ntt::PassInfo` in kernels/ntt/ntt.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct PassInfo {
    pub log_n: u32,
    pub s_lo: u32,
    pub bits: u32,
    pub log_lines: u32,
    pub num_groups: u32,
    pub flags: u32,
    pub factor_lo_bits: u32,
    pub scale_lo_bits: u32,
}

pub(super) const FLAG_FACTOR: u32 = 1;
pub(super) const FLAG_FACTOR_SPLIT: u32 = 2;
pub(super) const FLAG_SCALE_CONST: u32 = 4;
pub(super) const FLAG_SCALE_POWERS: u32 = 8;
pub(super) const FLAG_DIT: u32 = 16;

/// A scale as the kernels take it: flags and the two tables (the dummy buffer when unused).
pub(super) struct ScaleArgs<'a> {
    pub flags: u32,
    pub lo_bits: u32,
    pub lo: &'a DeviceBuffer<FrRepr>,
    pub hi: &'a DeviceBuffer<FrRepr>,
}

/// The kernels of the image this engine launches, looked up once.
#[derive(Clone, Debug)]
pub(super) struct Kernels {
    pub dif: Kernel,
    pub dit: Kernel,
    /// The pass kernels with 4 elements a thread (plan::Pass::elems_log = 2).
    pub dif4: Kernel,
    pub dit4: Kernel,
    pub tiny: Kernel,
    pub bitrev: Kernel,
    pub bitrev_tiled: Kernel,
    pub h_product: Kernel,
    pub h_finish: Kernel,
    pub h_finish_tiled: Kernel,
    pub arith: Kernel,
}

impl Kernels {
    pub fn load(device: &cuzk_cuda::Device) -> Result<Self, NttError> {
        let k = |name: &str| device.kernel(name);
        let kernels = Kernels {
            dif: k("cuzk_ntt_dif_pass")?,
            dit: k("cuzk_ntt_dit_pass")?,
            dif4: k("cuzk_ntt_dif_pass4")?,
            dit4: k("cuzk_ntt_dit_pass4")?,
            tiny: k("cuzk_ntt_tiny")?,
            bitrev: k("cuzk_ntt_bitrev")?,
            bitrev_tiled: k("cuzk_ntt_bitrev_tiled")?,
            h_product: k("cuzk_ntt_h_product")?,
            h_finish: k("cuzk_ntt_h_finish")?,
            h_finish_tiled: k("cuzk_ntt_h_finish_tiled")?,
            arith: k("cuzk_ntt_arith")?,
        };
        // Blocks hold up to 2^BLOCK_ELEMS_LOG elements of 32 bytes: above the default 48 KiB.
        let smem = smem_bytes_max();
        for k in [&kernels.dif, &kernels.dit, &kernels.dif4, &kernels.dit4] {
            k.set_max_dynamic_shared_mem(smem)?;
        }
        Ok(kernels)
    }
}

/// Shared memory of the largest block any plan uses.
pub(super) fn smem_bytes_max() -> u32 {
    (32usize << crate::plan::BLOCK_ELEMS_LOG) as u32
}

/// Launches one pass over up to three vectors; `grid_x` blocks loop over the line groups. `p`
/// is pass `pass_index` of the tables' plan in the shape `kernel` runs (`Pass::elems_log`).
#[allow(clippy::too_many_arguments)] // The kernel's parameter list, one argument each.
pub(super) fn pass(
    stream: &Stream,
    kernel: &Kernel,
    vectors: &mut [DeviceViewMut<'_, FrRepr>],
    tables: &DeviceTables,
    pass_index: usize,
    p: &Pass,
    scale: &ScaleArgs<'_>,
    dummy: &DeviceBuffer<FrRepr>,
    grid_x: u32,
) -> Result<(), NttError> {
    let log_n = tables.log_n;
    let planned = &tables.passes[pass_index];
    assert!(
        (p.s_lo, p.bits) == (planned.s_lo, planned.bits),
        "pass {p:?} is not pass {pass_index} of the plan"
    );
    let t = &tables.pass_tables[pass_index];
    let mut flags = scale.flags;
    let (factor_lo, factor_hi, factor_lo_bits) = match &t.factor {
        Some(f) => {
            flags |= FLAG_FACTOR;
            if f.hi.is_some() {
                flags |= FLAG_FACTOR_SPLIT;
            }
            (&f.lo, f.hi.as_ref().unwrap_or(dummy), f.lo_bits)
        }
        None => (dummy, dummy, 0),
    };
    let info = PassInfo {
        log_n,
        s_lo: p.s_lo,
        bits: p.bits,
        log_lines: p.log_lines_per_block,
        num_groups: 1 << (log_n - p.bits - p.log_lines_per_block),
        flags,
        factor_lo_bits,
        scale_lo_bits: scale.lo_bits,
    };
    let cfg = LaunchConfig {
        grid: (grid_x.clamp(1, info.num_groups), vectors.len() as u32, 1),
        block: (p.threads_per_block(), 1, 1),
        shared_mem_bytes: 32 * p.block_elems(),
    };
    check_vectors(vectors, log_n);
    let (v0, v1, v2) = split3(vectors);
    let mut launch = stream.launch(kernel);
    launch.view_mut(v0);
    push_optional(&mut launch, v1, dummy);
    push_optional(&mut launch, v2, dummy);
    launch
        .buf(&t.local_roots)
        .buf(factor_lo)
        .buf(factor_hi)
        .buf(scale.lo)
        .buf(scale.hi)
        .arg(&info);
    // SAFETY: `cuzk_ntt_{dif,dit}_pass{,4}(fr_t* v0, fr_t* v1, fr_t* v2, const fr_t* roots,
    // const fr_t* factor_lo, const fr_t* factor_hi, const fr_t* scale_lo, const fr_t* scale_hi,
    // PassInfo info)` gets exactly these arguments, PassInfo with the same C layout. Block y of
    // the grid touches only vector y (gridDim.y = the number of vectors pushed, every one of
    // 2^log_n elements, checked above); in it, block x visits line groups x, x + gridDim.x, …
    // below num_groups, whose elements are all below 2^log_n by the plan's construction
    // (plan::tests::passes_cover_every_bit_once). Tables are only read, at indices below their
    // lengths: roots below 2^bits, factor and scale exponents split at their tables' sizes
    // (DeviceTables builds them from the same plan; `p` is the same pass, checked above, and
    // its shape only decides how threads share the lines). blockDim is `p`'s threads per
    // block, at most 256 as every kernel's launch bound, for the elements a thread of `kernel`
    // holds (the caller picks the kernel by `p.elems_log`), and the dynamic shared memory its
    // block_elems · 32 bytes, within the limit set when the kernels were loaded.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// Launches the whole-transform kernel for sizes 2 and 4.
pub(super) fn tiny(
    stream: &Stream,
    kernel: &Kernel,
    vectors: &mut [DeviceViewMut<'_, FrRepr>],
    tables: &DeviceTables,
    dit: bool,
    scale: &ScaleArgs<'_>,
    dummy: &DeviceBuffer<FrRepr>,
) -> Result<(), NttError> {
    let log_n = tables.log_n;
    check_vectors(vectors, log_n);
    let info = PassInfo {
        log_n,
        bits: log_n,
        num_groups: 1,
        flags: scale.flags | if dit { FLAG_DIT } else { 0 },
        scale_lo_bits: scale.lo_bits,
        ..PassInfo::default()
    };
    let cfg = LaunchConfig {
        grid: (1, vectors.len() as u32, 1),
        block: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let (v0, v1, v2) = split3(vectors);
    let mut launch = stream.launch(kernel);
    launch.view_mut(v0);
    push_optional(&mut launch, v1, dummy);
    push_optional(&mut launch, v2, dummy);
    launch
        .buf(&tables.pass_tables[0].local_roots)
        .buf(scale.lo)
        .buf(scale.hi)
        .arg(&info);
    // SAFETY: `cuzk_ntt_tiny(fr_t* v0, fr_t* v1, fr_t* v2, const fr_t* roots,
    // const fr_t* scale_lo, const fr_t* scale_hi, PassInfo p)` gets exactly these arguments.
    // One thread of block y transforms vector y (2^log_n ≤ 4 elements, checked above); roots
    // has 2^log_n entries and is indexed below that; scale tables are indexed below their
    // sizes (split at lo_bits, built for log_n).
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// Launches the in-place bit-reversal permutation of up to three vectors of `2^log_n`.
pub(super) fn bit_reverse(
    stream: &Stream,
    kernels: &Kernels,
    vectors: &mut [DeviceViewMut<'_, FrRepr>],
    log_n: u32,
    dummy: &DeviceBuffer<FrRepr>,
    sm_count: u32,
) -> Result<(), NttError> {
    check_vectors(vectors, log_n);
    let (tiled, cfg) = bit_reverse_config(log_n, sm_count);
    let kernel = if tiled {
        &kernels.bitrev_tiled
    } else {
        &kernels.bitrev
    };
    let cfg = LaunchConfig {
        grid: (cfg.grid.0, vectors.len() as u32, 1),
        ..cfg
    };
    let (v0, v1, v2) = split3(vectors);
    let mut launch = stream.launch(kernel);
    launch.view_mut(v0);
    push_optional(&mut launch, v1, dummy);
    push_optional(&mut launch, v2, dummy);
    launch.arg(&log_n);
    // SAFETY: `cuzk_ntt_bitrev{,_tiled}(fr_t* v0, fr_t* v1, fr_t* v2, uint32_t log_n)` gets
    // exactly these arguments. Block y permutes vector y only (2^log_n elements each, checked
    // above), swapping indices below 2^log_n; the tiled kernel needs log_n ≥ 8 (checked here),
    // 256 threads and its 17 KiB of static shared memory.
    unsafe { launch.launch(cfg) }?;
    Ok(())
}

/// The grid of a bit reversal of `2^log_n` elements: 16×16 tiles from 2^8 up (one block of
/// 256 threads per tile, at most eight per SM, looping), one block of 256 below. Whether the
/// tiled kernel applies is the first value.
fn bit_reverse_config(log_n: u32, sm_count: u32) -> (bool, LaunchConfig) {
    if log_n >= 8 {
        let tiles = 1u32 << (log_n - 8);
        (true, LaunchConfig::linear(tiles.min(sm_count * 8), 256))
    } else {
        (false, LaunchConfig::linear(1, 256))
    }
}

/// Launches `a[i] = a[i]·b[i]` over equal-length vectors: the H step's product of the coset
/// evaluations of A and B.
pub(super) fn h_product(
    stream: &Stream,
    kernel: &Kernel,
    a: &mut DeviceViewMut<'_, FrRepr>,
    b: &mut DeviceViewMut<'_, FrRepr>,
    sm_count: u32,
) -> Result<(), NttError> {
    assert!(a.len() == b.len(), "callers check lengths");
    let n = a.len() as u64;
    let cfg = LaunchConfig::for_items(a.len(), 256, sm_count * 8);
    // SAFETY: `cuzk_ntt_h_product(fr_t* a, const fr_t* b, uint64_t n)` gets exactly these
    // arguments; both views hold n elements (asserted above) and the grid-stride loop stays
    // below n; b is only read.
    unsafe {
        stream
            .launch(kernel)
            .view_mut(a)
            .view_mut(b)
            .arg(&n)
            .launch(cfg)
    }?;
    Ok(())
}

/// Launches the H step's end: `a[i] = a[i] − c[i]` and the bit reversal of `a`, in one kernel
/// (`a` and `c` of `2^log_n` elements, both in bit-reversed order).
pub(super) fn h_finish(
    stream: &Stream,
    kernels: &Kernels,
    a: &mut DeviceViewMut<'_, FrRepr>,
    c: &mut DeviceViewMut<'_, FrRepr>,
    log_n: u32,
    sm_count: u32,
) -> Result<(), NttError> {
    assert!(
        a.len() == 1 << log_n && c.len() == 1 << log_n,
        "callers check lengths"
    );
    let (tiled, cfg) = bit_reverse_config(log_n, sm_count);
    let kernel = if tiled {
        &kernels.h_finish_tiled
    } else {
        &kernels.h_finish
    };
    // SAFETY: `cuzk_ntt_h_finish{,_tiled}(fr_t* a, const fr_t* c, uint32_t log_n)` gets exactly
    // these arguments; both views hold 2^log_n elements (asserted above) and the kernels index
    // below 2^log_n, reading c and a at the same index and writing only a (the two are distinct
    // buffers: both are borrowed mutably here). The tiled kernel needs log_n ≥ 8 (chosen
    // here), 256 threads and its 17 KiB of static shared memory; the other one block.
    unsafe {
        stream
            .launch(kernel)
            .view_mut(a)
            .view_mut(c)
            .arg(&log_n)
            .launch(cfg)
    }?;
    Ok(())
}

/// Launches the arithmetic check/measurement kernel: `out[i] = a[i] ∘ b[i]` repeated `iters`
/// times (`which`: 0–2 specialised mul/add/sub, 3–5 the generic field code).
#[allow(clippy::too_many_arguments)] // The kernel's parameter list, one argument each.
pub(super) fn arith(
    stream: &Stream,
    kernel: &Kernel,
    out: &mut DeviceBuffer<FrRepr>,
    a: &DeviceBuffer<FrRepr>,
    b: &DeviceBuffer<FrRepr>,
    which: u32,
    iters: u32,
    sm_count: u32,
) -> Result<(), NttError> {
    assert!(
        out.len() == a.len() && out.len() == b.len(),
        "callers check lengths"
    );
    let n = a.len() as u64;
    let cfg = LaunchConfig::for_items(a.len(), 256, sm_count * 8);
    // SAFETY: `cuzk_ntt_arith(fr_t* out, const fr_t* a, const fr_t* b, uint64_t n,
    // uint32_t which, uint32_t iters)` gets exactly these arguments; all buffers hold n
    // elements (asserted above) and the grid-stride loop stays below n; a and b are only read.
    unsafe {
        stream
            .launch(kernel)
            .buf_mut(out)
            .buf(a)
            .buf(b)
            .arg(&n)
            .arg(&which)
            .arg(&iters)
            .launch(cfg)
    }?;
    Ok(())
}

/// Every vector of a launch must have the plan's length: the kernels index up to 2^log_n.
fn check_vectors(vectors: &[DeviceViewMut<'_, FrRepr>], log_n: u32) {
    assert!(
        !vectors.is_empty() && vectors.len() <= VECTORS_PER_LAUNCH,
        "callers chunk batches"
    );
    assert!(
        vectors.iter().all(|v| v.len() == 1 << log_n),
        "callers check lengths"
    );
}

type Three<'s, 'v> = (
    &'s mut DeviceViewMut<'v, FrRepr>,
    Option<&'s mut DeviceViewMut<'v, FrRepr>>,
    Option<&'s mut DeviceViewMut<'v, FrRepr>>,
);

fn split3<'s, 'v>(vectors: &'s mut [DeviceViewMut<'v, FrRepr>]) -> Three<'s, 'v> {
    let mut it = vectors.iter_mut();
    let first = it.next().expect("checked non-empty");
    (first, it.next(), it.next())
}

/// Pushes a vector pointer, or the dummy buffer for an unused slot (the kernel never reads it:
/// gridDim.y stops short of that slot).
fn push_optional<'a>(
    launch: &mut cuzk_cuda::Launch<'a>,
    v: Option<&'a mut DeviceViewMut<'_, FrRepr>>,
    dummy: &'a DeviceBuffer<FrRepr>,
) {
    match v {
        Some(v) => {
            launch.view_mut(v);
        }
        None => {
            launch.buf(dummy);
        }
    }
}
