//! Every launch of the `cuzk_msm_*` and `cuzk_curve_*` kernels (kernels/msm/, kernels/curve/),
//! and nothing else: the only `unsafe` in the crate, each block checked against the kernel's
//! signature and the lengths it relies on.
#![allow(unsafe_code)] // Kernel launches are unsafe by nature; each one states why it is sound.

use crate::curve::MsmCurve;
use crate::plan::{MAX_BINS, SCAN_TILE, SPAN_XYZZ};
use crate::MsmError;
use bytemuck::{Pod, Zeroable};
use cuzk_cuda::{Device, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchConfig, Stream};
use cuzk_field::FrRepr;

/// Threads per block of the curve kernels (their `__launch_bounds__`).
const CURVE_BLOCK: u32 = 128;
/// Threads per block of the scalar kernels.
const SCALAR_BLOCK: u32 = 256;
/// Threads per block of the scan's tile pass (SCAN_BLOCK in kernels/msm/digits.cuh).
const SCAN_BLOCK: u32 = 256;
/// Threads of the one block that scans the tile sums.
const SCAN_SUMS_BLOCK: u32 = 1024;

/// Points each thread of the device point generator makes (at most 16, the kernel's limit).
pub const GEN_POINTS_PER_THREAD: u32 = 16;

/// Mirrors `DigitParams` in kernels/msm/digits.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct DigitParams {
    pub n: u32,
    pub base_offset: u32,
    pub c: u32,
    /// First digit window of the pass (a multiple of `copies`).
    pub w_begin: u32,
    /// Digit windows of the pass.
    pub w_count: u32,
    pub flags: u32,
    /// Shifted copies of the bases the entries read (1: none): digit window `w_begin + j`
    /// adds into bucket set `j / copies` and reads copy `j % copies`.
    pub copies: u32,
    /// Points between copies.
    pub copy_stride: u32,
}

impl DigitParams {
    /// Bucket sets of the pass: a window each without copies.
    pub fn sets(&self) -> u32 {
        self.w_count.div_ceil(self.copies.max(1))
    }

    /// Buckets of the pass: its sets' 2^(c−1) each.
    fn buckets(&self) -> usize {
        self.sets() as usize * (1usize << (self.c - 1))
    }
}

/// `DigitParams::flags`: entry j is point `tail_idx[j]` rather than `base_offset + j`.
pub(super) const DIGITS_INDEXED: u32 = 1;

/// Mirrors `LevelParams` in kernels/msm/level.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct LevelParams {
    m_value: u32,
    span: u32,
    key_div: u32,
    flags: u32,
    stride: u32,
}

const LEVEL_KEYS: u32 = 1;
const LEVEL_M_FROM_PTR: u32 = 2;
const LEVEL_STORE: u32 = 4;

/// Mirrors `PairParams` in kernels/msm/pairs.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct PairParams {
    nb: u32,
    key_base: u32,
}

/// The curve kernels of one group.
#[derive(Clone, Debug)]
pub(super) struct CurveKernels {
    level_affine: Kernel,
    level_xyzz: Kernel,
    add_buckets: Kernel,
    bucket_sums: Kernel,
    gen_points: Kernel,
    shift_copy: Kernel,
    /// The batch-affine pair levels and the level over their keyed affine points.
    pairs: PairKernels,
}

#[derive(Clone, Debug)]
struct PairKernels {
    sorted: Kernel,
    keyed: Kernel,
    level_points: Kernel,
}

/// The kernels of the image this engine launches, looked up once.
#[derive(Clone, Debug)]
pub(super) struct Kernels {
    prepare: Kernel,
    histogram: Kernel,
    scatter: Kernel,
    scan_tiles: Kernel,
    scan_sums: Kernel,
    scan_add: Kernel,
    halve_counts: Kernel,
    slot_keys: Kernel,
    bin_starts: Kernel,
    bin_pairs: Kernel,
    place: Kernel,
    g1: CurveKernels,
    g2: CurveKernels,
    /// Blocks of grid-stride launches: a few waves over the SMs.
    max_grid: u32,
    /// The device's streaming multiprocessors.
    sm_count: u32,
    /// Blocks of a `cuzk_msm_place` launch: as many as are resident at once, so that its
    /// grid-stride walk over chunks keeps the device on neighbouring pairs.
    place_grid: u32,
}

impl Kernels {
    pub fn load(device: &Device) -> Result<Self, MsmError> {
        let k = |name: &str| device.kernel(name);
        let curve = |g: &str| -> Result<CurveKernels, MsmError> {
            Ok(CurveKernels {
                level_affine: k(&format!("cuzk_msm_{g}_level_affine"))?,
                level_xyzz: k(&format!("cuzk_msm_{g}_level_xyzz"))?,
                add_buckets: k(&format!("cuzk_msm_{g}_add_buckets"))?,
                bucket_sums: k(&format!("cuzk_msm_{g}_bucket_sums"))?,
                gen_points: k(&format!("cuzk_curve_{g}_gen_points"))?,
                shift_copy: k(&format!("cuzk_curve_{g}_shift_copy"))?,
                pairs: PairKernels {
                    sorted: k(&format!("cuzk_msm_{g}_pair_level_sorted"))?,
                    keyed: k(&format!("cuzk_msm_{g}_pair_level_keyed"))?,
                    level_points: k(&format!("cuzk_msm_{g}_level_points"))?,
                },
            })
        };
        let place = k("cuzk_msm_place")?;
        place.set_max_dynamic_shared_mem(PLACE_SHARED)?;
        let sm_count = device.info().sm_count.max(1);
        let place_grid = sm_count
            * place
                .max_active_blocks_per_sm(PLACE_BLOCK, PLACE_SHARED as usize)?
                .max(1);
        Ok(Kernels {
            prepare: k("cuzk_msm_prepare")?,
            histogram: k("cuzk_msm_histogram")?,
            scatter: k("cuzk_msm_scatter")?,
            scan_tiles: k("cuzk_msm_scan_tiles")?,
            scan_sums: k("cuzk_msm_scan_sums")?,
            scan_add: k("cuzk_msm_scan_add")?,
            halve_counts: k("cuzk_msm_halve_counts")?,
            slot_keys: k("cuzk_msm_slot_keys")?,
            bin_starts: k("cuzk_msm_bin_starts")?,
            bin_pairs: k("cuzk_msm_bin_pairs")?,
            place,
            g1: curve("g1")?,
            g2: curve("g2")?,
            max_grid: sm_count * 16,
            sm_count,
            place_grid,
        })
    }

    fn curve<C: MsmCurve>(&self) -> &CurveKernels {
        if C::NAME == "g1" {
            &self.g1
        } else {
            &self.g2
        }
    }

    fn stride(&self, items: usize, block: u32) -> LaunchConfig {
        LaunchConfig::for_items(items, block, self.max_grid)
    }
}

/// Threads that share one work item (a point) in the curve kernels: G2 holds each Fp2
/// coordinate on a pair of adjacent lanes, c0 in the even and c1 in the odd one
/// (`fp2_lane_t` in kernels/field/bls12_381.cuh), G1 a whole point per thread.
fn lanes<C: MsmCurve>() -> usize {
    if C::NAME == "g2" {
        2
    } else {
        1
    }
}

fn threads(n: usize, block: u32) -> LaunchConfig {
    let blocks = n.div_ceil(block as usize).max(1);
    LaunchConfig::linear(u32::try_from(blocks).expect("grid fits 32 bits"), block)
}

fn u32_len(n: usize) -> u32 {
    u32::try_from(n).expect("lengths are planned below 2^32")
}

/// Writes `n` points (j + 1)·k_t·g to `out`, `GEN_POINTS_PER_THREAD` per thread.
pub(super) fn gen_points<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    out: &mut DeviceBuffer<C::AffineRepr>,
    generator: &C::AffineRepr,
    seed: u64,
) -> Result<(), MsmError> {
    let n = out.len() as u64;
    let per = GEN_POINTS_PER_THREAD;
    let cfg = threads(out.len().div_ceil(per as usize), CURVE_BLOCK);
    // SAFETY: `cuzk_curve_{g1,g2}_gen_points(affine_t<F>* out, uint64_t n, affine_t<F> g,
    // uint64_t seed, uint32_t per)` gets these arguments, the point layout matching
    // `C::AffineRepr` (96 or 192 bytes). Thread t writes out[t·per .. min(n, t·per + per)], all
    // below n = out.len(); per = 16 is within the kernel's limit; the grid covers n / per.
    unsafe {
        stream
            .launch(&k.curve::<C>().gen_points)
            .buf_mut(out)
            .arg(&n)
            .arg(generator)
            .arg(&seed)
            .arg(&per)
            .launch(cfg)
    }?;
    Ok(())
}

/// Fills copy `k` (≥ 1) of `table`, copies of `n` points each, with 2^bits times copy k − 1.
pub(super) fn shift_copy<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    table: &mut DeviceBuffer<C::AffineRepr>,
    n: usize,
    copy: u32,
    bits: u32,
) -> Result<(), MsmError> {
    assert!(copy >= 1 && n > 0 && table.len() >= (copy as usize + 1) * n);
    let per = GEN_POINTS_PER_THREAD;
    let cfg = threads(n.div_ceil(per as usize), CURVE_BLOCK);
    let n64 = n as u64;
    // SAFETY: `cuzk_curve_{g1,g2}_shift_copy(affine_t<F>* table, uint64_t n, uint32_t k,
    // uint32_t bits, uint32_t per)` gets these arguments, the point layout matching
    // `C::AffineRepr`. Thread t reads table[(k − 1)·n + t·per ..] and writes table[k·n + t·per
    // ..], both below (k + 1)·n ≤ table.len() (checked above); per = 16 is within the
    // kernel's limit; the grid covers n / per.
    unsafe {
        stream
            .launch(&k.curve::<C>().shift_copy)
            .buf_mut(table)
            .arg(&n64)
            .arg(&copy)
            .arg(&bits)
            .arg(&per)
            .launch(cfg)
    }?;
    Ok(())
}

/// Canonical scalars of one piece of a chunk, and in split mode the index lists and counts.
///
/// Dense: the piece lands at `canon[canon_offset..]`. Split: the tail is appended at
/// `counts[0]` and the ones at `counts[1]`.
#[allow(clippy::too_many_arguments)] // The kernel's parameter list, one argument each.
pub(super) fn prepare(
    stream: &Stream,
    k: &Kernels,
    input: &DeviceView<'_, FrRepr>,
    base_offset: u32,
    canon_offset: usize,
    split: bool,
    canon: &mut DeviceBuffer<FrRepr>,
    tail_idx: &mut DeviceBuffer<u32>,
    ones_idx: &mut DeviceBuffer<u32>,
    counts: &mut DeviceBuffer<u32>,
) -> Result<(), MsmError> {
    let n = input.len();
    assert!(canon.len() >= canon_offset + n && counts.len() >= 2);
    assert!(!split || (tail_idx.len() >= canon_offset + n && ones_idx.len() >= canon_offset + n));
    let (n32, split32, offset32) = (u32_len(n), split as u32, u32_len(canon_offset));
    // SAFETY: `cuzk_msm_prepare(const fr_t* in, uint32_t n, uint32_t base_offset, uint32_t
    // canon_offset, uint32_t split, fr_t* canon, uint32_t* tail_idx, uint32_t* ones_idx,
    // uint32_t* counts)` gets these arguments. It reads in[0..n) (the view's length) and writes
    // counts[0..2). Dense, it writes canon[canon_offset .. canon_offset + n) (checked above).
    // Split, it appends to canon and tail_idx at counts[0], which the caller zeroed at the start
    // of the chunk and which grows by at most n per piece, so it stays below canon_offset + n
    // (this piece's end within the chunk, checked above), and to ones_idx at counts[1], zeroed
    // with it (and possibly before each piece), so below canon_offset + n as well. Grid-stride
    // over n.
    unsafe {
        stream
            .launch(&k.prepare)
            .view(input)
            .arg(&n32)
            .arg(&base_offset)
            .arg(&offset32)
            .arg(&split32)
            .buf_mut(canon)
            .buf_mut(tail_idx)
            .buf_mut(ones_idx)
            .buf_mut(counts)
            .launch(k.stride(n, SCALAR_BLOCK))
    }?;
    Ok(())
}

/// Counts every non-zero digit of the chunk's tail per bucket into `hist` (zeroed before).
pub(super) fn histogram(
    stream: &Stream,
    k: &Kernels,
    canon: &DeviceBuffer<FrRepr>,
    counts: &DeviceBuffer<u32>,
    scalars: std::ops::Range<usize>,
    p: &DigitParams,
    hist: &mut DeviceViewMut<'_, u32>,
) -> Result<(), MsmError> {
    assert!(hist.len() >= p.buckets() && p.copies >= 1);
    assert!(
        canon.len() >= p.n as usize && scalars.start <= scalars.end && scalars.end <= p.n as usize
    );
    let from32 = scalars.start as u32;
    // SAFETY: `cuzk_msm_histogram(const fr_t* canon, const uint32_t* counts, uint32_t from,
    // DigitParams p, uint32_t* hist)` gets these arguments, DigitParams with the same C layout.
    // It reads canon[from .. counts[0]) with counts[0] ≤ p.n (prepare writes at most the
    // chunk's n) and canon ≥ p.n long, and increments hist below sets·2^(c−1) (checked
    // above). Grid-stride, sized for `scalars` (the kernel stops at counts[0] whatever it is).
    unsafe {
        stream
            .launch(&k.histogram)
            .buf(canon)
            .buf(counts)
            .arg(&from32)
            .arg(p)
            .view_mut(hist)
            .launch(k.stride(scalars.len(), SCALAR_BLOCK))
    }?;
    Ok(())
}

/// Exclusive scan of `hist` into `offsets[..len]`, with the total in `offsets[len]`.
pub(super) fn scan(
    stream: &Stream,
    k: &Kernels,
    hist: &DeviceView<'_, u32>,
    offsets: &mut DeviceBuffer<u32>,
    tiles: &mut DeviceBuffer<u32>,
) -> Result<(), MsmError> {
    let len = hist.len();
    let tile_count = len.div_ceil(SCAN_TILE).max(1);
    assert!(offsets.len() > len && tiles.len() >= tile_count);
    let (len32, tiles32) = (u32_len(len), u32_len(tile_count));
    // SAFETY: `cuzk_msm_scan_tiles(const uint32_t* in, uint32_t len, uint32_t* out, uint32_t*
    // tile_sums)`: block b reads and writes indices [b·SCAN_TILE, (b+1)·SCAN_TILE) below len
    // (in and out hold len, checked above) and tile_sums[b], b < tile_count ≤ tiles.len();
    // blockDim is SCAN_BLOCK as the kernel's tile size assumes.
    unsafe {
        stream
            .launch(&k.scan_tiles)
            .view(hist)
            .arg(&len32)
            .buf_mut(offsets)
            .buf_mut(tiles)
            .launch(LaunchConfig::linear(tiles32, SCAN_BLOCK))
    }?;
    {
        let mut total = offsets.slice_mut(len..len + 1);
        // SAFETY: `cuzk_msm_scan_sums(uint32_t* tile_sums, uint32_t tiles, uint32_t* total)`:
        // one block reads and rewrites tile_sums[0..tiles) and writes total[0], a one-element
        // view.
        unsafe {
            stream
                .launch(&k.scan_sums)
                .buf_mut(tiles)
                .arg(&tiles32)
                .view_mut(&mut total)
                .launch(LaunchConfig::linear(1, SCAN_SUMS_BLOCK))
        }?;
    }
    let mut body = offsets.slice_mut(..len);
    // SAFETY: `cuzk_msm_scan_add(uint32_t* out, uint32_t len, const uint32_t* tile_sums)`
    // updates out[0..len) (the view's length) reading tile_sums[i / SCAN_TILE] < tile_count.
    unsafe {
        stream
            .launch(&k.scan_add)
            .view_mut(&mut body)
            .arg(&len32)
            .buf(tiles)
            .launch(k.stride(len, SCALAR_BLOCK))
    }?;
    Ok(())
}

/// Writes the sorted (bucket, point) pairs of the chunk's tail.
#[allow(clippy::too_many_arguments)] // The kernel's parameter list, one argument each.
pub(super) fn scatter(
    stream: &Stream,
    k: &Kernels,
    canon: &DeviceBuffer<FrRepr>,
    tail_idx: &DeviceBuffer<u32>,
    counts: &DeviceBuffer<u32>,
    p: &DigitParams,
    cursor: &mut DeviceViewMut<'_, u32>,
    pairs: &mut DeviceBuffer<u32>,
) -> Result<(), MsmError> {
    let max_pairs = p.n as usize * p.w_count as usize;
    assert!(pairs.len() >= 2 * max_pairs && canon.len() >= p.n as usize);
    assert!(cursor.len() >= p.buckets() && p.copies >= 1);
    assert!(p.flags & DIGITS_INDEXED == 0 || tail_idx.len() >= p.n as usize);
    // SAFETY: `cuzk_msm_scatter(const fr_t* canon, const uint32_t* tail_idx, const uint32_t*
    // counts, DigitParams p, uint32_t* cursor, uint2* pairs)`. It reads counts[0] ≤ p.n
    // scalars (and indices, when indexed), bumps cursor below sets·2^(c−1) (checked above),
    // and writes pairs at cursor positions, which the histogram of the same digits bounds by
    // the number of non-zero digits ≤ n·w_count; pairs holds that many u32 pairs (checked
    // above) and, as a whole allocation, is aligned for 8-byte stores.
    unsafe {
        stream
            .launch(&k.scatter)
            .buf(canon)
            .buf(tail_idx)
            .buf(counts)
            .arg(p)
            .view_mut(cursor)
            .buf_mut(pairs)
            .launch(k.stride(p.n as usize, SCALAR_BLOCK))
    }?;
    Ok(())
}

/// Where the first level of a reduction chain reads its entries.
pub(super) enum FirstLevel<'a, C: MsmCurve> {
    /// Base indices (sign in the top bit) into `bases`: entry i is `vals[i·stride]`, its key
    /// `keys[i·stride]` or `i / key_div`.
    Affine {
        keys: Option<DeviceView<'a, u32>>,
        key_div: u32,
        vals: DeviceView<'a, u32>,
        stride: u32,
        bases: &'a DeviceBuffer<C::AffineRepr>,
    },
    /// XYZZ points with keys `i / key_div`.
    Xyzz {
        key_div: u32,
        pts: &'a DeviceBuffer<C::XyzzRepr>,
    },
    /// Affine points with keys `keys[i]`: what the pair levels left.
    Points {
        keys: &'a DeviceBuffer<u32>,
        pts: &'a DeviceBuffer<C::AffineRepr>,
    },
}

/// How many entries the first level reads: a device counter or a known number.
pub(super) enum Count<'a> {
    /// `m[0]`, written by an earlier kernel.
    Device(DeviceView<'a, u32>),
    /// A number known on the host.
    Host(u32),
}

/// How a reduction's levels flush a completed run into its bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flush {
    /// `buckets[key] += sum`: the buckets hold earlier chunks' sums (a later chunk of a plan
    /// without a second bucket array) or a running sum (the ones, the window sums).
    Add,
    /// `buckets[key] = sum`: every bucket this reduction's keys name is at infinity and no
    /// other reduction writes it (chains over other keys may share the array). Each key's
    /// complete run closes in one slice of one level, so a bucket gets at most one sum other
    /// than infinity, and the store saves the flush's random load and general addition
    /// (`FLAG_STORE` in kernels/msm/level.cuh).
    Store,
}

/// The ping-pong buffers of the levels after the first.
#[derive(Debug)]
pub(super) struct Partials<C: MsmCurve> {
    pub keys: [DeviceBuffer<u32>; 2],
    pub pts: [DeviceBuffer<C::XyzzRepr>; 2],
    pub m: [DeviceBuffer<u32>; 2],
    /// Stands in for pointer arguments a launch does not use.
    pub dummy: DeviceBuffer<u32>,
}

/// A whole reduction: `buckets[key] += Σ entries of key` (or `=` with `Flush::Store`) for up to
/// `m_max` entries, by levels of `plan::level_threads(m_max, span)` threads until one thread is
/// left.
#[allow(clippy::too_many_arguments)] // Each chain differs in all of them.
pub(super) fn reduce<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    first: FirstLevel<'_, C>,
    count: Count<'_>,
    m_max: usize,
    span: u32,
    parts: &mut Partials<C>,
    buckets: &mut DeviceViewMut<'_, C::XyzzRepr>,
    flush: Flush,
) -> Result<(), MsmError> {
    let levels = crate::plan::level_threads(m_max, span);
    let store = if flush == Flush::Store {
        LEVEL_STORE
    } else {
        0
    };
    let ck = k.curve::<C>();
    let Partials {
        keys: [keys_a, keys_b],
        pts: [pts_a, pts_b],
        m: [m_a, m_b],
        dummy,
    } = parts;
    assert!(keys_a.len() >= 2 * levels[0] && pts_a.len() >= 2 * levels[0] && !m_a.is_empty());
    let (m_value, m_flag, m_view) = match count {
        Count::Device(v) => {
            assert!(!v.is_empty());
            (0, LEVEL_M_FROM_PTR, Some(v))
        }
        Count::Host(m) => {
            assert!(m as usize <= m_max);
            (m, 0, None)
        }
    };
    let dummy_view = dummy.slice(..);
    let m_in = m_view.as_ref().unwrap_or(&dummy_view);
    let lanes = lanes::<C>();
    let cfg = threads(levels[0] * lanes, CURVE_BLOCK);
    match first {
        FirstLevel::Affine {
            keys,
            key_div,
            vals,
            stride,
            bases,
        } => {
            let p = LevelParams {
                m_value,
                span,
                key_div,
                flags: m_flag | store | if keys.is_some() { LEVEL_KEYS } else { 0 },
                stride,
            };
            // The last entry read is (m_max − 1)·stride.
            let need = m_max.saturating_sub(1) * stride as usize + 1;
            assert!(stride >= 1 && vals.len() >= need);
            assert!(keys.as_ref().is_none_or(|k| k.len() >= need));
            let dummy_keys = dummy.slice(..);
            let keys = keys.unwrap_or(dummy_keys);
            // SAFETY: `cuzk_msm_{g1,g2}_level_affine(const uint32_t* keys, const uint32_t*
            // vals, const affine_t<F>* bases, const uint32_t* m_in, LevelParams p, xyzz_t<F>*
            // buckets, uint32_t* out_keys, xyzz_t<F>* out_pts, uint32_t* m_out)`, LevelParams
            // in the same C layout. The entry count m ≤ m_max (the counter's producer writes at
            // most the planned pairs, or the host value checked above); the kernel reads keys
            // (only with LEVEL_KEYS) and vals at i·stride for i < m, inside both views (checked
            // above), and bases at the
            // indices in vals, which the producers took from this MSM's points, all below
            // bases.len() (checked by the engine before the chunk loop). Keys are below
            // buckets.len(): window-relative buckets of this pass, or 0 with key_div = u32::MAX
            // for the one-element ones buffer. It writes slots below 2·ceil(m / span) ≤
            // 2·levels[0] ≤ out lengths (checked above) and m_out[0]; the grid covers levels[0]
            // work items of `lanes` threads each (CURVE_BLOCK is a multiple of 32, so no pair of
            // lanes straddles a block).
            unsafe {
                stream
                    .launch(&ck.level_affine)
                    .view(&keys)
                    .view(&vals)
                    .buf(bases)
                    .view(m_in)
                    .arg(&p)
                    .view_mut(buckets)
                    .buf_mut(keys_a)
                    .buf_mut(pts_a)
                    .buf_mut(m_a)
                    .launch(cfg)
            }?;
        }
        FirstLevel::Xyzz { key_div, pts } => {
            let p = LevelParams {
                m_value,
                span,
                key_div,
                flags: m_flag | store,
                stride: 1,
            };
            assert!(pts.len() >= m_max);
            // SAFETY: `cuzk_msm_{g1,g2}_level_xyzz(const uint32_t* keys, const xyzz_t<F>* pts,
            // const uint32_t* m_in, LevelParams p, xyzz_t<F>* buckets, uint32_t* out_keys,
            // xyzz_t<F>* out_pts, uint32_t* m_out)`. Without LEVEL_KEYS the key of entry i is
            // i / key_div, below buckets.len() by the caller's construction (segments of the
            // pass's windows); pts is read below m ≤ m_max ≤ pts.len(); outputs and grid as
            // above.
            unsafe {
                stream
                    .launch(&ck.level_xyzz)
                    .buf(dummy)
                    .buf(pts)
                    .view(m_in)
                    .arg(&p)
                    .view_mut(buckets)
                    .buf_mut(keys_a)
                    .buf_mut(pts_a)
                    .buf_mut(m_a)
                    .launch(cfg)
            }?;
        }
        FirstLevel::Points { keys, pts } => {
            let p = LevelParams {
                m_value,
                span,
                key_div: 1,
                flags: m_flag | store | LEVEL_KEYS,
                stride: 1,
            };
            assert!(keys.len() >= m_max && pts.len() >= m_max);
            // SAFETY: `cuzk_msm_{g1,g2}_level_points(const uint32_t* keys, const
            // affine_t<F>* pts, const uint32_t* m_in, LevelParams p, xyzz_t<F>* buckets,
            // uint32_t* out_keys, xyzz_t<F>* out_pts, uint32_t* m_out)`, F matching
            // `C::AffineRepr` and `C::XyzzRepr`. It reads keys and pts below m ≤ m_max ≤ both
            // lengths (checked above); the keys are the pair levels' copies of sorted keys of
            // this pass, so below buckets.len(); outputs and grid (`lanes` threads per item)
            // as above.
            unsafe {
                stream
                    .launch(&ck.pairs.level_points)
                    .buf(keys)
                    .buf(pts)
                    .view(m_in)
                    .arg(&p)
                    .view_mut(buckets)
                    .buf_mut(keys_a)
                    .buf_mut(pts_a)
                    .buf_mut(m_a)
                    .launch(cfg)
            }?;
        }
    }
    for (i, &t) in levels.iter().enumerate().skip(1) {
        let p = LevelParams {
            m_value: 0,
            span: SPAN_XYZZ,
            key_div: 1,
            flags: LEVEL_KEYS | LEVEL_M_FROM_PTR | store,
            stride: 1,
        };
        // Level i reads what level i − 1 wrote: A then B alternately.
        let (src_keys, src_pts, src_m, dst_keys, dst_pts, dst_m) = if i % 2 == 1 {
            (
                &*keys_a,
                &*pts_a,
                &*m_a,
                &mut *keys_b,
                &mut *pts_b,
                &mut *m_b,
            )
        } else {
            (
                &*keys_b,
                &*pts_b,
                &*m_b,
                &mut *keys_a,
                &mut *pts_a,
                &mut *m_a,
            )
        };
        assert!(dst_keys.len() >= 2 * t && dst_pts.len() >= 2 * t);
        assert!(src_keys.len() >= 2 * levels[i - 1] && src_pts.len() >= 2 * levels[i - 1]);
        // SAFETY: the same kernel as above with LEVEL_KEYS | LEVEL_M_FROM_PTR: it reads
        // src_m[0] = 2·ceil(m_prev / span_prev) ≤ 2·levels[i−1] entries of src_keys and src_pts
        // (checked above), whose keys are keys of the first level (so below buckets.len()),
        // and writes 2·ceil(m / SPAN_XYZZ) ≤ 2·levels[i] slots (checked above) and dst_m[0];
        // the grid covers levels[i] work items of `lanes` threads. Source and destination are
        // different buffers.
        unsafe {
            stream
                .launch(&ck.level_xyzz)
                .buf(src_keys)
                .buf(src_pts)
                .buf(src_m)
                .arg(&p)
                .view_mut(buckets)
                .buf_mut(dst_keys)
                .buf_mut(dst_pts)
                .buf_mut(dst_m)
                .launch(threads(t * lanes, CURVE_BLOCK))
        }?;
    }
    Ok(())
}

/// `buckets[i] += more[i]` for the first `n` buckets: a later chunk's buckets added into its
/// pass's, one addition a work item.
pub(super) fn add_buckets<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    more: &DeviceBuffer<C::XyzzRepr>,
    n: usize,
    buckets: &mut DeviceBuffer<C::XyzzRepr>,
) -> Result<(), MsmError> {
    assert!(more.len() >= n && buckets.len() >= n);
    let count = u32_len(n);
    // SAFETY: `cuzk_msm_{g1,g2}_add_buckets(xyzz_t<F>* buckets, const xyzz_t<F>* more,
    // uint32_t n)`: work item i < n (`lanes` threads each; the grid's items past n return at
    // once) reads more[i] and reads and writes buckets[i], with n at most either length
    // (checked above); the two are distinct buffers.
    unsafe {
        stream
            .launch(&k.curve::<C>().add_buckets)
            .buf_mut(buckets)
            .buf(more)
            .arg(&count)
            .launch(threads(n * lanes::<C>(), CURVE_BLOCK))
    }?;
    Ok(())
}

/// Per-segment bucket sums of the pass's `w_count` windows into `out`.
pub(super) fn bucket_sums<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    buckets: &DeviceBuffer<C::XyzzRepr>,
    w_count: u32,
    nb: u32,
    seg_log: u32,
    out: &mut DeviceBuffer<C::XyzzRepr>,
) -> Result<(), MsmError> {
    let segments = w_count as usize * (nb >> seg_log) as usize;
    assert!(buckets.len() >= w_count as usize * nb as usize && out.len() >= segments);
    assert!(seg_log < 32 && nb.is_power_of_two() && seg_log <= nb.trailing_zeros());
    // SAFETY: `cuzk_msm_{g1,g2}_bucket_sums(const xyzz_t<F>* buckets, uint32_t w_count,
    // uint32_t nb, uint32_t seg_log, xyzz_t<F>* out)`: work item t < w_count·(nb >> seg_log)
    // (`lanes` threads each, the grid covering all of them) reads 2^seg_log buckets of window
    // t / segs, all below w_count·nb (checked above), and writes out[t] (out holds every
    // segment, checked above).
    unsafe {
        stream
            .launch(&k.curve::<C>().bucket_sums)
            .buf(buckets)
            .arg(&w_count)
            .arg(&nb)
            .arg(&seg_log)
            .buf_mut(out)
            .launch(threads(segments * lanes::<C>(), CURVE_BLOCK))
    }?;
    Ok(())
}

/// `out[b] = ceil(input[b] / 2)` for every bucket of `input`: a window group's counts after a
/// pair level.
pub(super) fn halve_counts(
    stream: &Stream,
    k: &Kernels,
    input: &DeviceView<'_, u32>,
    out: &mut DeviceBuffer<u32>,
) -> Result<(), MsmError> {
    let n = input.len();
    assert!(out.len() >= n);
    let n32 = u32_len(n);
    // SAFETY: `cuzk_msm_halve_counts(const uint32_t* in, uint32_t n, uint32_t* out)` reads
    // in[0..n) (the view's length) and writes out[0..n) (checked above); grid-stride.
    unsafe {
        stream
            .launch(&k.halve_counts)
            .view(input)
            .arg(&n32)
            .buf_mut(out)
            .launch(k.stride(n, SCALAR_BLOCK))
    }?;
    Ok(())
}

/// The keys of a pair level's output slots: bucket b's `half[b]` slots from `out_start[b]`
/// get `key_base + b` (`half` the halved counts, `out_start` their exclusive scan; `slots`
/// bounds their sum, `plan::pair_outputs`). A thread per slot, so that the work does not
/// depend on how the entries fall into buckets.
pub(super) fn slot_keys(
    stream: &Stream,
    k: &Kernels,
    half: &DeviceView<'_, u32>,
    out_start: &DeviceBuffer<u32>,
    key_base: u32,
    slots: usize,
    keys: &mut DeviceBuffer<u32>,
) -> Result<(), MsmError> {
    let n = half.len();
    assert!(n >= 1 && out_start.len() >= n && keys.len() >= slots);
    let n32 = u32_len(n);
    // SAFETY: `cuzk_msm_slot_keys(const uint32_t* half, const uint32_t* out_start, uint32_t n,
    // uint32_t key_base, uint32_t* keys)` reads half[n − 1] and out_start[0..n) (n ≥ 1,
    // checked above) and writes keys[s] for every s below out_start[n − 1] + half[n − 1], the
    // sum of the halved counts, which the caller bounds by `slots` ≤ keys.len() (checked
    // above; the plan's `pair_outputs`); grid-stride over `slots` threads at most.
    unsafe {
        stream
            .launch(&k.slot_keys)
            .view(half)
            .buf(out_start)
            .arg(&n32)
            .arg(&key_base)
            .buf_mut(keys)
            .launch(k.stride(slots.max(1), SCALAR_BLOCK))
    }?;
    Ok(())
}

/// Where a pair level reads a window group's entries (contiguous in key order).
pub(super) enum PairInput<'a, C: MsmCurve> {
    /// The sort's interleaved (key, base index | sign) pairs, bucket b's `cnt[b]` of them
    /// ending at `start[b]` (the scatter's cursors).
    Sorted {
        pairs: &'a DeviceBuffer<u32>,
        bases: &'a DeviceBuffer<C::AffineRepr>,
    },
    /// Affine points of the level before, bucket b's from `start[b]`.
    Keyed {
        pts: &'a DeviceBuffer<C::AffineRepr>,
    },
}

/// One batch-affine pair level over the `cnt.len()` buckets of one window group (keys from
/// `key_base`): bucket b's sums go to `out_pts` from `out_start[b]`, the exclusive scan of the
/// halved counts, whose slots' keys `slot_keys` has written to `keys`. `positions`: the most
/// entries the group can hold at this level (bounds the slots, `plan::pair_outputs`, which
/// size the grid with `plan::pair_threads`).
#[allow(clippy::too_many_arguments)] // The kernel's parameter list, one argument each.
pub(super) fn pair_level<C: MsmCurve>(
    stream: &Stream,
    k: &Kernels,
    input: PairInput<'_, C>,
    cnt: &DeviceView<'_, u32>,
    start: &DeviceView<'_, u32>,
    key_base: u32,
    out_start: &DeviceBuffer<u32>,
    keys: &DeviceBuffer<u32>,
    out_pts: &mut DeviceBuffer<C::AffineRepr>,
    positions: usize,
) -> Result<(), MsmError> {
    let nb = cnt.len();
    assert!(nb >= 1 && start.len() >= nb && out_start.len() >= nb);
    let outputs = crate::plan::pair_outputs(positions, nb, 1);
    assert!(keys.len() >= outputs && out_pts.len() >= outputs);
    let p = PairParams {
        nb: u32_len(nb),
        key_base,
    };
    let kernels = &k.curve::<C>().pairs;
    // One wave at most: as many work items (of `lanes` threads) as the driver says fit at once
    // (the kernels' registers decide it: 3 blocks of 128 threads per SM for G1 on sm_90).
    let lanes = lanes::<C>();
    let resident = |kernel: &Kernel| -> Result<usize, MsmError> {
        let blocks = kernel.max_active_blocks_per_sm(CURVE_BLOCK, 0)?.max(1);
        Ok(blocks as usize * CURVE_BLOCK as usize / lanes)
    };
    let kernel = match input {
        PairInput::Sorted { .. } => &kernels.sorted,
        PairInput::Keyed { .. } => &kernels.keyed,
    };
    let cfg = threads(
        crate::plan::pair_threads(outputs, k.sm_count, resident(kernel)?) * lanes,
        CURVE_BLOCK,
    );
    // SAFETY: `cuzk_msm_{g1,g2}_pair_level_sorted(const uint32_t* pairs, const affine_t<F>*
    // bases, const uint32_t* cnt, const uint32_t* cursor, PairParams p, const uint32_t*
    // out_start, const uint32_t* keys, affine_t<F>* out_pts)` and
    // `cuzk_msm_{g1,g2}_pair_level_keyed(const affine_t<F>* pts, const uint32_t* cnt, const
    // uint32_t* start, PairParams p, const uint32_t* out_start, const uint32_t* keys,
    // affine_t<F>* out_pts)`, F matching `C::AffineRepr`, a work item of `lanes` threads per
    // slot (CURVE_BLOCK is a multiple of 32, so no lane pair straddles a block). Both read cnt,
    // start and out_start below p.nb (checked above), and keys[s] and out_pts[s] for the
    // slots s below out_start[nb − 1] + ceil(cnt[nb − 1] / 2), the sum of the halved counts,
    // at most `pair_outputs(positions, nb, 1)` ≤ both lengths (checked above); keys[s] −
    // key_base < nb is slot s's bucket, as `slot_keys` wrote it. Slot s of bucket b reads
    // entries begin(b) + 2j and the next (j = s − out_start[b], the next only below cnt[b]):
    // - sorted: pairs are the chunk's sorted (key, value) pairs and bases the MSM's points;
    //   the group's entries lie between cursor[0] − cnt[0] and cursor[nb − 1] (the cursors
    //   as either scatter leaves them), contiguous since its
    //   windows' keys are, a range the sort wrote, at most `positions` pairs (the chunk's
    //   points for each window of the group, one digit per window), and the base
    //   indices come from this MSM's points;
    // - keyed: pts are the points of the level before, the group's entries
    //   [0, start[nb − 1] + cnt[nb − 1]), what that level wrote, at most `positions`, in a
    //   buffer other than the output.
    // Each slot has one writer, the one work item that takes it (both lanes of a G2 pair write
    // their own halves of its coordinates).
    unsafe {
        let mut launch = stream.launch(kernel);
        match input {
            PairInput::Sorted { pairs, bases } => {
                assert!(pairs.len() >= 2 * positions);
                launch.buf(pairs).buf(bases);
            }
            PairInput::Keyed { pts } => {
                assert!(pts.len() >= positions);
                launch.buf(pts);
            }
        }
        launch
            .view(cnt)
            .view(start)
            .arg(&p)
            .buf(out_start)
            .buf(keys)
            .buf_mut(out_pts)
            .launch(cfg)
    }?;
    Ok(())
}

/// Mirrors `BinParams` in kernels/msm/bins.cuh.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct BinParams {
    w_lo: u32,
    w_count: u32,
    shift: u32,
    bins: u32,
}

/// Threads of a `cuzk_msm_bin_pairs` block and the scalars it takes (BLOCK and TILE in
/// kernels/msm/bins.cuh).
const BIN_BLOCK: u32 = 256;
const BIN_TILE: usize = 4 * BIN_BLOCK as usize;
/// Threads of a `cuzk_msm_place` block and its shared counters' bytes (PLACE_BLOCK and
/// PLACE_KEYS in kernels/msm/bins.cuh).
const PLACE_BLOCK: u32 = 512;
const PLACE_SHARED: u32 = 4 << 14;

/// The binned scatter's buffers.
#[derive(Debug)]
pub(super) struct BinBuffers {
    /// A window group's pairs (interleaved key, value) in bin order.
    pub tmp: DeviceBuffer<u32>,
    /// The group's bin cursors, then its first and end place in the pass.
    pub cursors: DeviceBuffer<u32>,
}

/// Places the chunk's (bucket, point) pairs as [`scatter`] does, through bins of 2^`shift`
/// keys (kernels/msm/bins.cuh), `group` windows of the pass at a time. `cursor` is the
/// histogram's exclusive scan of the pass's buckets followed by its total; each bucket's cursor
/// ends at the bucket's end, as the scatter leaves it.
#[allow(clippy::too_many_arguments)] // The digit kernels' inputs and the two buffers.
pub(super) fn binned_scatter(
    stream: &Stream,
    k: &Kernels,
    canon: &DeviceBuffer<FrRepr>,
    tail_idx: &DeviceBuffer<u32>,
    counts: &DeviceBuffer<u32>,
    p: &DigitParams,
    len: usize,
    (group, shift): (u32, u32),
    cursor: &mut DeviceBuffer<u32>,
    pairs: &mut DeviceBuffer<u32>,
    bins: &mut BinBuffers,
) -> Result<(), MsmError> {
    let half = 1u32 << (p.c - 1);
    let pass_buckets = p.buckets();
    let sets = p.sets();
    assert!(cursor.len() > pass_buckets && p.copies >= 1);
    assert!(pairs.len() >= 2 * len * p.w_count as usize);
    assert!(canon.len() >= len && !counts.is_empty() && len <= p.n as usize);
    assert!(p.flags & DIGITS_INDEXED == 0 || tail_idx.len() >= len);
    assert!(group >= 1 && shift < p.c);
    let blocks = u32_len(len.div_ceil(BIN_TILE).max(1));
    // Groups of `group` bucket sets; a group's digit windows are its sets' windows.
    let mut w_lo = 0;
    while w_lo < sets {
        let w_count = group.min(sets - w_lo);
        let b = BinParams {
            w_lo,
            w_count,
            shift,
            bins: w_count * (half >> shift),
        };
        let digit_windows = (w_count * p.copies).min(p.w_count - w_lo * p.copies);
        w_lo += w_count;
        let group_pairs = len * digit_windows as usize;
        assert!(b.bins as usize <= MAX_BINS && bins.cursors.len() >= b.bins as usize + 2);
        assert!(bins.tmp.len() >= 2 * group_pairs);
        // SAFETY: `cuzk_msm_bin_starts(const uint32_t* offsets, uint32_t half, BinParams b,
        // uint32_t* out)`, BinParams in the same C layout. It reads offsets at the group's
        // first key plus i << shift for i < bins (below its end key) and at its end key
        // (w_lo + w_count) · half ≤ pass_buckets < cursor.len() (checked above), and writes
        // out[0 .. bins + 2), which the cursors hold (checked above). Grid-stride.
        unsafe {
            stream
                .launch(&k.bin_starts)
                .buf(cursor)
                .arg(&half)
                .arg(&b)
                .buf_mut(&mut bins.cursors)
                .launch(k.stride(b.bins as usize, SCALAR_BLOCK))
        }?;
        // SAFETY: `cuzk_msm_bin_pairs(const fr_t* canon, const uint32_t* tail_idx, const
        // uint32_t* counts, DigitParams p, BinParams b, uint32_t* cursor, uint2* out)`. Block
        // i reads scalars (and indices, when indexed) [i · TILE, (i + 1) · TILE) below
        // counts[0] ≤ len (both buffers at least len long, checked above), counts its pairs
        // of the group into b.bins ≤ MAX_BINS shared counters (checked above), reserves runs
        // from cursor[0 .. bins) (the cursors) and writes each pair of the group once, at a
        // place below the group's pair count ≤ len · its digit windows, which tmp holds (checked
        // above); an allocation is aligned for 8-byte stores. Blocks of BIN_BLOCK threads as
        // the kernel assumes, one per tile of the chunk.
        unsafe {
            stream
                .launch(&k.bin_pairs)
                .buf(canon)
                .buf(tail_idx)
                .buf(counts)
                .arg(p)
                .arg(&b)
                .buf_mut(&mut bins.cursors)
                .buf_mut(&mut bins.tmp)
                .launch(LaunchConfig::linear(blocks, BIN_BLOCK))
        }?;
        let bounds = bins.cursors.slice(b.bins as usize..b.bins as usize + 2);
        // SAFETY: `cuzk_msm_place(const uint2* in, const uint32_t* bounds, uint32_t shift,
        // uint32_t* cursor, uint2* pairs)`. It reads in[0 .. bounds[1] − bounds[0]) (the
        // group's pairs, which bin_pairs wrote; bounds = the cursors at b.bins, written by
        // bin_starts) and moves each to pairs at a place taken from cursor[key] for the
        // group's keys, below pass_buckets < cursor.len(); those places are the group's
        // buckets' ranges, which the histogram of the same digits bounds by the pass's pair
        // count ≤ len · p.w_count, which pairs holds (checked above). Blocks of PLACE_BLOCK
        // threads with PLACE_SHARED bytes of dynamic shared memory, as the kernel assumes
        // (allowed at load); grid-stride over chunks.
        unsafe {
            stream
                .launch(&k.place)
                .buf(&bins.tmp)
                .view(&bounds)
                .arg(&shift)
                .buf_mut(cursor)
                .buf_mut(pairs)
                .launch(
                    LaunchConfig::linear(k.place_grid, PLACE_BLOCK).with_shared_mem(PLACE_SHARED),
                )
        }?;
    }
    Ok(())
}
