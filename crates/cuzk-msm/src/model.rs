//! A CPU model of the GPU engine's data flow, kernel by kernel (prepare, histogram, scan,
//! scatter, the reduction levels, bucket sums) and host step by step (passes, chunks, the 0/1
//! split, window combination), over blstrs points. It checks the parts a wrong index would
//! break (slot bookkeeping of the levels, segment weights, carries across chunks and passes)
//! against the reference on machines without a GPU; the point formulas are checked in `xyzz`.

use crate::curve::MsmCurve;
use crate::digits::{canonical_limbs, signed_digits};
use crate::plan::{level_outputs, Plan, MAX_BINS, SPAN_ONES, SPAN_XYZZ};
use cuzk_field::PrimeCurveAffine as _;
use cuzk_field::Scalar;
use ff::Field;
use group::Group;

/// Where a reduction level's entries come from.
enum Entries<'a, C: MsmCurve> {
    /// Sorted base indices with the sign in the top bit.
    Affine(&'a [u32], &'a [C::Affine]),
    /// Partial sums of an earlier level.
    Points(&'a [C::Projective]),
    /// Affine coordinates the pair levels wrote, (0, 0) for the identity.
    Coords(&'a [Coords<C>]),
}

/// Affine coordinates as the kernels hold them: the identity is (0, 0), since no point of
/// prime order has y = 0.
type Coords<C> = (<C as MsmCurve>::Base, <C as MsmCurve>::Base);

fn to_point<C: MsmCurve>(c: &Coords<C>) -> C::Projective {
    if bool::from(c.1.is_zero()) {
        return C::Projective::identity();
    }
    C::from_coords(c.0, c.1)
        .expect("a pair level wrote a point off the curve")
        .to_curve()
}

/// How a chain flushes a completed run: as `Flush` in the engine's launches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flush {
    Add,
    /// The buckets start at the identity and this chain alone writes them, so the kernel stores
    /// each run's sum; the model checks that no bucket gets a second sum.
    Store,
}

fn flush<C: MsmCurve>(bucket: &mut C::Projective, acc: C::Projective, how: Flush) {
    if how == Flush::Store && !bool::from(acc.is_identity()) {
        assert!(
            bool::from(bucket.is_identity()),
            "a storing reduction flushed a bucket twice"
        );
        *bucket = acc;
    } else {
        *bucket += acc;
    }
}

/// One level of the segmented reduction, thread by thread as `level` in kernels/msm/level.cuh.
fn level<C: MsmCurve>(
    keys: Option<&[u32]>,
    key_div: u32,
    entries: Entries<'_, C>,
    m: usize,
    span: u32,
    buckets: &mut [C::Projective],
    how: Flush,
) -> (Vec<u32>, Vec<C::Projective>) {
    let key = |i: usize| keys.map_or(i as u32 / key_div, |k| k[i]);
    let point = |i: usize| match &entries {
        Entries::Affine(vals, bases) => {
            let v = vals[i];
            let p = bases[(v & 0x7fff_ffff) as usize].to_curve();
            if v >> 31 == 1 {
                -p
            } else {
                p
            }
        }
        Entries::Points(p) => p[i],
        Entries::Coords(c) => to_point::<C>(&c[i]),
    };
    let span = span as usize;
    let threads = m.div_ceil(span);
    let mut out_keys = vec![0u32; 2 * threads];
    let mut out_pts = vec![C::Projective::identity(); 2 * threads];
    for t in 0..threads {
        let (s, e) = (t * span, ((t + 1) * span).min(m));
        let first_key = key(s);
        let head_partial = s > 0 && key(s - 1) == first_key;
        let (mut cur, mut first_run) = (first_key, true);
        let (mut wrote_a, mut wrote_b) = (false, false);
        let mut acc = C::Projective::identity();
        for i in s..e {
            let k = key(i);
            if k != cur {
                if first_run && head_partial {
                    out_keys[2 * t] = cur;
                    out_pts[2 * t] = acc;
                    wrote_a = true;
                } else {
                    flush::<C>(&mut buckets[cur as usize], acc, how);
                }
                first_run = false;
                cur = k;
                acc = C::Projective::identity();
            }
            acc += point(i);
        }
        let tail_partial = e < m && key(e) == cur;
        if if first_run {
            head_partial || tail_partial
        } else {
            tail_partial
        } {
            let slot = if first_run { 2 * t } else { 2 * t + 1 };
            out_keys[slot] = cur;
            out_pts[slot] = acc;
            if first_run {
                wrote_a = true;
            } else {
                wrote_b = true;
            }
        } else {
            flush::<C>(&mut buckets[cur as usize], acc, how);
        }
        if !wrote_a {
            out_keys[2 * t] = first_key;
        }
        if !wrote_b {
            out_keys[2 * t + 1] = cur;
        }
    }
    assert_eq!(out_keys.len(), level_outputs(m, span as u32));
    (out_keys, out_pts)
}

/// A whole chain of levels, as the host launches it, until one thread remains.
fn chain<C: MsmCurve>(
    keys: Option<&[u32]>,
    key_div: u32,
    first: Entries<'_, C>,
    m: usize,
    span: u32,
    buckets: &mut [C::Projective],
    how: Flush,
) {
    let (mut k, mut p) = level::<C>(keys, key_div, first, m, span, buckets, how);
    let mut threads = m.div_ceil(span as usize);
    while threads > 1 {
        let (k2, p2) = level::<C>(
            Some(&k),
            1,
            Entries::Points(&p),
            k.len(),
            SPAN_XYZZ,
            buckets,
            how,
        );
        threads = k.len().div_ceil(SPAN_XYZZ as usize);
        (k, p) = (k2, p2);
    }
}

/// The binned scatter of one chunk, as `MsmEngine` launches it (kernels/msm/bins.cuh): per
/// group of `plan.bin_windows` windows of the pass, bins of 2^`plan.bin_shift` keys of one
/// window, starting where the histogram's scan puts their first key; each tile of [`BIN_TILE`]
/// scalars reserves a run in every bin it reaches and writes its pairs there; then each chunk of
/// the group's binned pairs takes a run from each of its keys' cursors and places its pairs
/// there (keys too far from the chunk's first bin: a place each). The device reserves and
/// writes in any order; here tiles and chunks go last to first and a tile's scalars likewise,
/// so each bucket's pairs come out in another order than the scatter's. `pairs[j][w]` is
/// scalar j's (key, value) in window w of the pass, `None` for a zero digit; `offsets` the scan
/// of the pass's `w_count · nb` buckets and its total. Returns the keys and values in place
/// order.
fn binned_scatter(
    pairs: &[Vec<Option<(u32, u32)>>],
    offsets: &[u32],
    nb: usize,
    w_count: usize,
    plan: &Plan,
) -> (Vec<u32>, Vec<u32>) {
    // A scalar's pairs come per digit window, `copies` of them to each bucket set.
    let copies = plan.copies as usize;
    const BIN_TILE: usize = 1024;
    // PLACE_CHUNK and PLACE_KEYS in kernels/msm/bins.cuh.
    const PLACE_CHUNK: usize = 512 * 16;
    const PLACE_KEYS: u32 = 1 << 14;
    let (group, shift) = (plan.bin_windows as usize, plan.bin_shift);
    assert!(group > 0 && (1usize << shift) <= nb);
    let per_window = nb >> shift;
    let total = offsets[w_count * nb] as usize;
    let (mut keys, mut vals) = (vec![u32::MAX; total], vec![0u32; total]);
    let mut cursor = offsets.to_vec();
    let mut w_lo = 0;
    while w_lo < w_count {
        let g = group.min(w_count - w_lo);
        let key_lo = w_lo * nb;
        let (base, end) = (offsets[key_lo], offsets[key_lo + g * nb]);
        let bins = g * per_window;
        assert!(bins <= MAX_BINS, "{bins} bins");
        let bin_start = |b: usize| offsets[key_lo + (b << shift)] - base;
        let mut run_end: Vec<u32> = (0..bins).map(bin_start).collect();
        let bin_of = |key: u32| {
            let rel = key as usize - key_lo;
            rel / nb * per_window + ((rel % nb) >> shift)
        };
        let mut tmp: Vec<Option<(u32, u32)>> = vec![None; (end - base) as usize];
        let group_pairs = |s: &Vec<Option<(u32, u32)>>| {
            s[w_lo * copies..((w_lo + g) * copies).min(s.len())]
                .iter()
                .flatten()
                .copied()
                .collect::<Vec<_>>()
        };
        for tile in pairs.chunks(BIN_TILE).rev() {
            let mut count = vec![0u32; bins];
            for e in tile.iter().flat_map(group_pairs) {
                count[bin_of(e.0)] += 1;
            }
            let mut at: Vec<u32> = (0..bins)
                .map(|b| {
                    let first = run_end[b];
                    run_end[b] += count[b];
                    first
                })
                .collect();
            for e in tile.iter().rev().flat_map(group_pairs) {
                let b = bin_of(e.0);
                assert!(
                    tmp[at[b] as usize].replace(e).is_none(),
                    "a place written twice"
                );
                at[b] += 1;
            }
        }
        // Every bin filled exactly to the next one's start.
        for (b, &e) in run_end.iter().enumerate() {
            let next = if b + 1 < bins {
                bin_start(b + 1)
            } else {
                end - base
            };
            assert_eq!(e, next, "bin {b} of the group at window {w_lo}");
        }
        // The place pass: chunks of PLACE_CHUNK pairs in any order (here last to first); a
        // chunk's keys within PLACE_KEYS of its first pair's bin take one run each from their
        // cursors, the others a place each.
        for chunk in tmp.chunks(PLACE_CHUNK).rev() {
            let chunk: Vec<(u32, u32)> = chunk
                .iter()
                .map(|e| e.expect("every place of the group written"))
                .collect();
            let lo = chunk[0].0 >> shift << shift;
            let ranked = |key: u32| key.wrapping_sub(lo) < PLACE_KEYS;
            let mut runs = std::collections::BTreeMap::<u32, u32>::new();
            for &(key, _) in chunk.iter().filter(|e| ranked(e.0)) {
                *runs.entry(key).or_default() += 1;
            }
            for (key, run) in runs.iter_mut().rev() {
                let count = *run;
                *run = cursor[*key as usize];
                cursor[*key as usize] += count;
            }
            for &(key, val) in chunk.iter().rev() {
                let at = match runs.get_mut(&key) {
                    Some(run) => run,
                    None => &mut cursor[key as usize],
                };
                let pos = *at as usize;
                *at += 1;
                assert_eq!(keys[pos], u32::MAX, "pair place {pos} written twice");
                (keys[pos], vals[pos]) = (key, val);
            }
        }
        w_lo += g;
    }
    // The cursors end where the scatter leaves them: at their buckets' ends.
    assert_eq!(&cursor[..w_count * nb], &offsets[1..=w_count * nb]);
    (keys, vals)
}

/// How a pair is summed, as `classify` in kernels/msm/pairs.cuh: the kind, and the
/// denominator to invert for ADD and DOUBLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PairKind {
    TakeP,
    TakeQ,
    Cancel,
    Add,
    Double,
}

fn classify<F: Field>(p: &(F, F), q: &(F, F)) -> (PairKind, F) {
    if bool::from(q.1.is_zero()) {
        (PairKind::TakeP, F::ONE)
    } else if bool::from(p.1.is_zero()) {
        (PairKind::TakeQ, F::ONE)
    } else if p.0 != q.0 {
        (PairKind::Add, q.0 - p.0)
    } else if p.1 == q.1 {
        (PairKind::Double, p.1.double())
    } else {
        (PairKind::Cancel, F::ONE)
    }
}

/// p + q given 1 / den, as `pair_sum` in kernels/msm/pairs.cuh.
fn pair_sum<F: Field>(p: &(F, F), q: &(F, F), kind: PairKind, inv_den: F) -> (F, F) {
    let num = if kind == PairKind::Double {
        let x2 = p.0.square();
        x2.double() + x2
    } else {
        q.1 - p.1
    };
    let l = num * inv_den;
    let x = l.square() - p.0 - q.0;
    (x, l * (p.0 - x) - p.1)
}

/// The keys of a pair level's output slots, as `cuzk_msm_slot_keys` in kernels/msm/sort.cu
/// writes them (it finds each slot's bucket by binary search over `out_start`; the keys are
/// the same): bucket b's ceil(cnt[b] / 2) slots from `out_start[b]` get `key_base + b`.
/// Slots left unwritten keep `u32::MAX`, so that one shows.
fn slot_keys(cnt: &[u32], out_start: &[usize], key_base: u32, outputs: usize) -> Vec<u32> {
    let mut keys = vec![u32::MAX; outputs];
    for (b, (&c, &at)) in cnt.iter().zip(out_start).enumerate() {
        keys[at..at + c.div_ceil(2) as usize].fill(key_base + b as u32);
    }
    keys
}

/// One pair level over one window, thread by thread as `pair_level` in kernels/msm/pairs.cuh:
/// `threads` threads take the window's output slots grid-stride (`keys`, from `slot_keys`,
/// naming each slot's bucket), each batching the inversions of its pairs through the
/// products it stores in its slots (the kernel's shortcut, classifying from the x
/// coordinates alone when they are distinct and non-zero, decides as `classify` does, so the
/// model classifies whole points). Bucket b's `cnt[b]` entries begin at `begin[b]` of `pts`,
/// and its ceil(cnt[b] / 2) outputs at `out_start[b]`. Returns the output points.
fn pair_level<C: MsmCurve>(
    pts: &[Coords<C>],
    cnt: &[u32],
    begin: &[usize],
    key_base: u32,
    out_start: &[usize],
    keys: &[u32],
    threads: usize,
) -> Vec<Coords<C>> {
    let zero = <C::Base as Field>::ZERO;
    // Unwritten slots keep a mark no output can have (x = 1, y = 0 is not the identity's
    // encoding), so that a slot left unwritten shows.
    let mut out_pts = vec![(<C::Base as Field>::ONE, zero); keys.len()];
    // The slot's first entry, and whether a second follows it in its bucket.
    let entry = |s: usize| -> (usize, bool) {
        let b = (keys[s] - key_base) as usize;
        let rel = 2 * (s - out_start[b]);
        (begin[b] + rel, rel + 1 < cnt[b] as usize)
    };
    for t in 0..threads {
        let mut acc = <C::Base as Field>::ONE;
        for s in (t..keys.len()).step_by(threads) {
            let (i, pair) = entry(s);
            if !pair {
                out_pts[s] = pts[i];
                continue;
            }
            let (kind, den) = classify(&pts[i], &pts[i + 1]);
            match kind {
                PairKind::TakeP => out_pts[s] = pts[i],
                PairKind::TakeQ => out_pts[s] = pts[i + 1],
                PairKind::Cancel => out_pts[s] = (zero, zero),
                PairKind::Add | PairKind::Double => {
                    out_pts[s].0 = acc;
                    acc *= den;
                }
            }
        }
        let mut inv_acc = acc.invert().expect("no denominator is zero");
        for s in (t..keys.len()).step_by(threads).rev() {
            let (i, pair) = entry(s);
            if !pair {
                continue;
            }
            let (kind, den) = classify(&pts[i], &pts[i + 1]);
            if matches!(kind, PairKind::Add | PairKind::Double) {
                let inv_den = inv_acc * out_pts[s].0;
                inv_acc *= den;
                out_pts[s] = pair_sum(&pts[i], &pts[i + 1], kind, inv_den);
            }
        }
    }
    out_pts
}

/// Exclusive scan of ceil(c / 2) over the counts, and the total.
fn halved_starts(cnt: &[u32]) -> (Vec<u32>, Vec<usize>, usize) {
    let half: Vec<u32> = cnt.iter().map(|c| c.div_ceil(2)).collect();
    let mut starts = Vec::with_capacity(cnt.len());
    let mut total = 0usize;
    for &h in &half {
        starts.push(total);
        total += h as usize;
    }
    (half, starts, total)
}

/// The accumulation of one chunk with pair levels, as `MsmEngine::pair_levels` launches it:
/// per group of `plan.pair_group` windows (one key range), `levels` pair levels from the
/// sorted entries, then a chain over what is left.
#[allow(clippy::too_many_arguments)] // The chunk's sort, as the engine holds it.
fn pair_levels<C: MsmCurve>(
    keys: &[u32],
    vals: &[u32],
    bases: &[C::Affine],
    hist: &[u32],
    (w_count, d_count): (usize, usize),
    nb: usize,
    len: usize,
    plan: &Plan,
    buckets: &mut [C::Projective],
    how: Flush,
) {
    let copies = plan.copies as usize;
    let zero = <C::Base as Field>::ZERO;
    let coords: Vec<Coords<C>> = vals
        .iter()
        .map(|&v| {
            let (x, y) = C::coords(&bases[(v & 0x7fff_ffff) as usize]).unwrap_or((zero, zero));
            (x, if v >> 31 == 1 { -y } else { y })
        })
        .collect();
    let group = plan.pair_group.max(1) as usize;
    let mut at = 0usize;
    for w0 in (0..w_count).step_by(group) {
        let g = group.min(w_count - w0);
        let key_base = (w0 * nb) as u32;
        // At most `len` entries from each of the group's digit windows.
        let (gnb, m) = (g * nb, len * (g * copies).min(d_count - w0 * copies));
        let mut cnt = hist[w0 * nb..w0 * nb + gnb].to_vec();
        let mut begin: Vec<usize> = Vec::with_capacity(gnb);
        for &c in &cnt {
            begin.push(at);
            at += c as usize;
        }
        let (mut k, mut p) = (keys.to_vec(), coords.clone());
        for level in 0..plan.affine_levels {
            let (half, starts, total) = halved_starts(&cnt);
            assert!(total <= crate::plan::pair_outputs(m, gnb, level + 1));
            let cap = if level % 2 == 0 {
                plan.sizes.affine_a
            } else {
                plan.sizes.affine_b
            };
            assert!(
                total <= cap,
                "level {level}: {total} slots, buffer of {cap}"
            );
            assert!(gnb <= plan.sizes.window_buckets);
            let threads = crate::plan::pair_threads(total, 1, 512);
            k = slot_keys(&cnt, &starts, key_base, total);
            p = pair_level::<C>(&p, &cnt, &begin, key_base, &starts, &k, threads);
            let unwritten = (<C::Base as Field>::ONE, <C::Base as Field>::ZERO);
            assert!(!p.contains(&unwritten), "a slot's point was left unwritten");
            (cnt, begin) = (half, starts);
        }
        assert!(
            k.iter().all(|&key| key != u32::MAX),
            "a slot's key was left unwritten"
        );
        chain::<C>(
            Some(&k),
            1,
            Entries::Coords(&p),
            k.len(),
            plan.span_affine,
            buckets,
            how,
        );
    }
}

/// Σ (j + 1)·B_j per window, in segments as `bucket_sums` computes it, then summed by a chain.
fn window_sums<C: MsmCurve>(
    buckets: &[C::Projective],
    windows: usize,
    nb: usize,
    seg_log: u32,
) -> Vec<C::Projective> {
    let len = 1usize << seg_log;
    let segs = nb >> seg_log;
    let mut out = Vec::with_capacity(windows * segs);
    for w in 0..windows {
        for k in 0..segs {
            let b = &buckets[w * nb + k * len..w * nb + (k + 1) * len];
            let (mut run, mut tot) = (C::Projective::identity(), C::Projective::identity());
            for j in (0..len).rev() {
                run += b[j];
                tot += run;
            }
            out.push(tot + run * Scalar::from((k * len) as u64));
        }
    }
    let mut sums = vec![C::Projective::identity(); windows];
    chain::<C>(
        None,
        segs as u32,
        Entries::Points(&out),
        out.len(),
        SPAN_XYZZ,
        &mut sums,
        Flush::Add,
    );
    sums
}

/// The engine's answer for `plan`, modelled on the CPU.
pub fn msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
    plan: &Plan,
    split: bool,
) -> C::Projective {
    let n = scalars.len();
    let nb = plan.buckets as usize;
    // With copies, `bases` holds `plan.copies` of them back to back and a bucket set takes
    // that many digit windows.
    let copies = plan.copies as usize;
    assert_eq!(bases.len() % copies, 0);
    let stride = bases.len() / copies;
    let digit_windows = crate::digits::window_count(plan.bits) as usize;
    let mut all_windows = vec![C::Projective::identity(); plan.windows as usize];
    let mut ones = [C::Projective::identity()];
    for pass in 0..plan.passes() {
        let w_begin = pass * plan.pass_windows;
        let w_count = plan.pass_windows.min(plan.windows - w_begin) as usize;
        let d_begin = w_begin as usize * copies;
        let d_count = (w_count * copies).min(digit_windows - d_begin);
        // Digit window d_begin + j of a scalar with base index idx: its key (bucket set j /
        // copies) and value (copy j % copies), or None for a zero digit.
        let pair = |d: &[i32], j: usize, idx: u32| -> Option<(u32, u32)> {
            let dw = d[d_begin + j];
            (dw != 0).then(|| {
                let key = ((j / copies) * nb) as u32 + dw.unsigned_abs() - 1;
                let point = idx + ((j % copies) * stride) as u32;
                (key, point | if dw < 0 { 1 << 31 } else { 0 })
            })
        };
        let mut buckets = vec![C::Projective::identity(); w_count * nb];
        for chunk in 0..plan.chunks(n) {
            let range = chunk * plan.chunk..((chunk + 1) * plan.chunk).min(n);
            // prepare: canonical scalars, with the split's index lists.
            let mut tail: Vec<([u64; 4], u32)> = Vec::new();
            let mut one_idx: Vec<u32> = Vec::new();
            for i in range.clone() {
                let s = canonical_limbs(&scalars[i]);
                if !split {
                    tail.push((s, i as u32));
                } else if s == [1, 0, 0, 0] {
                    one_idx.push(i as u32);
                } else if s != [0; 4] {
                    tail.push((s, i as u32));
                }
            }
            if split && pass == 0 {
                // The engine sums each piece's ones in a chain of its own.
                for piece in one_idx.chunks(plan.piece) {
                    let entries = Entries::Affine(piece, bases);
                    let (len, ones) = (piece.len(), &mut ones);
                    chain::<C>(None, u32::MAX, entries, len, SPAN_ONES, ones, Flush::Add);
                }
            }
            // histogram, scan, scatter.
            let mut hist = vec![0u32; w_count * nb];
            let digits: Vec<Vec<i32>> = tail
                .iter()
                .map(|(s, _)| signed_digits(s, plan.bits))
                .collect();
            let each = |f: &mut dyn FnMut(u32, u32)| {
                for ((_, idx), d) in tail.iter().zip(&digits) {
                    for j in 0..d_count {
                        if let Some((key, val)) = pair(d, j, *idx) {
                            f(key, val);
                        }
                    }
                }
            };
            each(&mut |key, _| hist[key as usize] += 1);
            // The histogram's exclusive scan and its total.
            let offsets: Vec<u32> = std::iter::once(0)
                .chain(hist.iter().scan(0u32, |acc, &h| {
                    *acc += h;
                    Some(*acc)
                }))
                .collect();
            let m = offsets[hist.len()];
            let mut cursor = offsets[..hist.len()].to_vec();
            let mut keys = vec![0u32; m as usize];
            let mut vals = vec![0u32; m as usize];
            each(&mut |key, val| {
                let pos = cursor[key as usize] as usize;
                cursor[key as usize] += 1;
                keys[pos] = key;
                vals[pos] = val;
            });
            if plan.bin_windows > 0 {
                // The binned scatter leaves each bucket's pairs, in some order, where the
                // scatter leaves them; the levels below then run on its output.
                let per_scalar: Vec<Vec<Option<(u32, u32)>>> = tail
                    .iter()
                    .zip(&digits)
                    .map(|((_, idx), d)| (0..d_count).map(|j| pair(d, j, *idx)).collect())
                    .collect();
                let (bk, bv) = binned_scatter(&per_scalar, &offsets, nb, w_count, plan);
                assert_eq!(
                    bk, keys,
                    "the binned scatter's keys differ from the scatter's"
                );
                for b in 0..w_count * nb {
                    let r = offsets[b] as usize..offsets[b + 1] as usize;
                    let (mut x, mut y) = (bv[r.clone()].to_vec(), vals[r].to_vec());
                    x.sort_unstable();
                    y.sort_unstable();
                    assert_eq!(x, y, "bucket {b}: the binned scatter's points differ");
                }
                vals = bv;
            }
            // The pass's first chunk stores into its zeroed buckets, and so does each later
            // one into a zeroed second array, added into the pass's after, as the engine does
            // where the plan holds that array.
            let fresh = chunk > 0 && plan.sizes.chunk_points >= w_count * nb;
            let how = if chunk == 0 || fresh {
                Flush::Store
            } else {
                Flush::Add
            };
            let mut chunk_buckets = if fresh {
                vec![C::Projective::identity(); w_count * nb]
            } else {
                Vec::new()
            };
            let target = if fresh {
                &mut chunk_buckets
            } else {
                &mut buckets
            };
            if plan.affine_levels > 0 {
                let len = range.len();
                pair_levels::<C>(
                    &keys,
                    &vals,
                    bases,
                    &hist,
                    (w_count, d_count),
                    nb,
                    len,
                    plan,
                    target,
                    how,
                );
            } else {
                chain::<C>(
                    Some(&keys),
                    1,
                    Entries::Affine(&vals, bases),
                    m as usize,
                    plan.span_affine,
                    target,
                    how,
                );
            }
            if fresh {
                // `add_buckets`: one addition a bucket.
                for (b, c) in buckets.iter_mut().zip(&chunk_buckets) {
                    *b += c;
                }
            }
        }
        let sums = window_sums::<C>(&buckets, w_count, nb, plan.seg_log);
        all_windows[w_begin as usize..w_begin as usize + w_count].copy_from_slice(&sums);
    }
    let mut acc = C::Projective::identity();
    for w in all_windows.iter().rev() {
        for _ in 0..plan.set_bits() {
            acc = acc.double();
        }
        acc += w;
    }
    acc + ones[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{G1, G2};
    use crate::plan::{bin_shift, bin_windows, PlanInput};
    use crate::testing::{random_bases, random_scalars, shifted_table, sparse_scalars};
    use cuzk_field::PrimeCurveAffine;
    use ff::Field;

    fn input(n: usize, bits: u32) -> PlanInput {
        PlanInput {
            n,
            tail: n,
            bits: Some(bits),
            split: true,
            staged: true,
            xyzz_bytes: 192,
            sm_count: 1,
            allowance: 1 << 30,
            affine_levels: Some(0),
            pair_group: 0,
            binned_scatter: Some(false),
            copies: 1,
            upload_overlap: Some(false),
        }
    }

    fn plan(n: usize, bits: u32, allowance: usize, split: bool) -> Plan {
        Plan::new(&PlanInput {
            allowance,
            split,
            ..input(n, bits)
        })
        .unwrap()
    }

    fn check<C: MsmCurve>(bases: &[C::Affine], scalars: &[Scalar], p: &Plan, what: &str) {
        let want = crate::cpu::msm::<C>(bases, scalars).unwrap();
        for split in [false, true] {
            assert_eq!(
                msm::<C>(bases, scalars, p, split),
                want,
                "{what}, split {split}, {p:?}"
            );
        }
    }

    #[test]
    fn model_matches_reference_on_random_inputs() {
        for (n, bits) in [(1, 4), (2, 5), (3, 8), (100, 4), (1000, 7), (3000, 10)] {
            let bases = random_bases::<G1>(n, n as u64);
            let scalars = random_scalars(n, 7 + n as u64);
            check::<G1>(
                &bases,
                &scalars,
                &plan(n, bits, 1 << 30, true),
                &format!("n {n}"),
            );
        }
        let bases = random_bases::<G2>(300, 1);
        check::<G2>(
            &bases,
            &random_scalars(300, 2),
            &plan(300, 6, 1 << 30, true),
            "g2",
        );
    }

    #[test]
    fn plans_cut_to_held_buffers_match_reference() {
        // A one-chunk plan of every window, run in buffers made for half its windows a pass
        // (cut to two passes) or for half its chunk (cut to two chunks).
        let n = 3000;
        let bases = random_bases::<G1>(n, 21);
        let scalars = random_scalars(n, 22);
        let call = input(n, 8);
        let whole = plan(n, 8, 1 << 30, true);
        assert_eq!((whole.chunks(n), whole.passes()), (1, 1));
        let half_windows = whole.pass_windows.div_ceil(2);
        for (held, want_windows, want_chunks) in [
            (Plan::with_chunk(&call, 8, half_windows, n), half_windows, 1),
            (
                Plan::with_chunk(&call, 8, whole.pass_windows, n / 2),
                whole.pass_windows,
                2,
            ),
        ] {
            let cut = whole.within(&call, &held.sizes).unwrap();
            assert_eq!(
                (cut.pass_windows, cut.chunks(n)),
                (want_windows, want_chunks)
            );
            check::<G1>(&bases, &scalars, &cut, "cut plan");
        }
    }

    #[test]
    fn heavy_buckets_cross_many_slices() {
        let n = 2000;
        let bases = random_bases::<G1>(n, 3);
        let p = plan(n, 6, 1 << 30, true);
        assert!(
            p.span_affine as usize * 4 < n,
            "the heavy bucket must cross slices"
        );
        // All-one scalars: one bucket of window 0 holds every point.
        check::<G1>(&bases, &vec![Scalar::ONE; n], &p, "all ones");
        // Repeated bases and one repeated scalar: equal points meet in every bucket.
        let same = vec![bases[0]; n];
        check::<G1>(&same, &vec![-Scalar::ONE; n], &p, "r - 1 on one base");
        let mut with_identity = bases.clone();
        for i in (0..n).step_by(3) {
            with_identity[i] = PrimeCurveAffine::identity();
        }
        check::<G1>(&with_identity, &random_scalars(n, 4), &p, "identity bases");
        check::<G1>(&bases, &vec![Scalar::ZERO; n], &p, "all zero");
    }

    /// `p` with pair levels, all windows of a pass in one group.
    fn with_levels(p: &Plan, levels: u32) -> Plan {
        with_group(p, levels, p.pass_windows)
    }

    fn with_group(p: &Plan, levels: u32, group: u32) -> Plan {
        let mut p = *p;
        p.affine_levels = levels;
        p.with_pair_group(group)
    }

    #[test]
    fn pair_levels_match_reference_on_random_and_edge_inputs() {
        let n = 2000;
        let bases = random_bases::<G1>(n, 11);
        let p = plan(n, 6, 1 << 30, true);
        // A pair of each base with its negation, the same scalar on both: every pair cancels.
        let mut opposite = bases.clone();
        for i in (1..n).step_by(2) {
            opposite[i] = (-opposite[i - 1].to_curve()).into();
        }
        let mut with_identity = bases.clone();
        for i in (0..n).step_by(3) {
            with_identity[i] = PrimeCurveAffine::identity();
        }
        let same = vec![bases[0]; n];
        for levels in [1, 2, 3, 6, crate::plan::MAX_AFFINE_LEVELS] {
            let q = with_levels(&p, levels);
            check::<G1>(&bases, &random_scalars(n, 12), &q, "random");
            check::<G1>(&bases, &vec![Scalar::ONE; n], &q, "all ones");
            // Equal points in every bucket: every pair doubles.
            check::<G1>(&same, &vec![-Scalar::ONE; n], &q, "r - 1 on one base");
            check::<G1>(&opposite, &vec![Scalar::from(77u64); n], &q, "P and -P");
            check::<G1>(&with_identity, &random_scalars(n, 13), &q, "identity bases");
            check::<G1>(&bases, &vec![Scalar::ZERO; n], &q, "all zero");
            check::<G1>(&bases, &sparse_scalars(n, 0.3, 0.3, 14), &q, "sparse");
        }
        // Groups of one window, of a few, and one not dividing the pass (a shorter last group).
        assert!(
            p.pass_windows > 5 && !p.pass_windows.is_multiple_of(5),
            "{p:?}"
        );
        for group in [1, 2, 5] {
            let q = with_group(&p, 2, group);
            assert_eq!(q.pair_group, group);
            check::<G1>(&bases, &random_scalars(n, 17), &q, "random, grouped");
            check::<G1>(&same, &vec![-Scalar::ONE; n], &q, "r - 1, grouped");
            check::<G1>(
                &opposite,
                &vec![Scalar::from(3u64); n],
                &q,
                "P and -P, grouped",
            );
        }
        for (n, bits) in [(1, 4), (2, 5), (3, 8), (100, 4), (1000, 7)] {
            let bases = random_bases::<G1>(n, n as u64);
            let q = with_levels(&plan(n, bits, 1 << 30, true), 2);
            check::<G1>(
                &bases,
                &random_scalars(n, 3 + n as u64),
                &q,
                &format!("n {n}"),
            );
        }
        // G2: the same levels over Fp2 coordinates.
        let n = 600;
        let g2 = random_bases::<G2>(n, 15);
        let mut g2_opposite = g2.clone();
        for i in (1..n).step_by(2) {
            g2_opposite[i] = (-g2_opposite[i - 1].to_curve()).into();
        }
        for levels in [1, 3] {
            let q = with_levels(&plan(n, 6, 1 << 30, true), levels);
            check::<G2>(&g2, &random_scalars(n, 16), &q, "g2 random");
            check::<G2>(&vec![g2[0]; n], &vec![-Scalar::ONE; n], &q, "g2 doubling");
            check::<G2>(
                &g2_opposite,
                &vec![Scalar::from(5u64); n],
                &q,
                "g2 P and -P",
            );
        }
    }

    #[test]
    fn pair_level_threads_each_batch_their_own_pairs() {
        // One window of 5 buckets with counts 0, 1, 2, 7, 4 (odd and even, a run of one, an
        // empty bucket), keys from 40: any number of threads gives every bucket its sum.
        let cnt = [0u32, 1, 2, 7, 4];
        let m: usize = cnt.iter().map(|&c| c as usize).sum();
        let bases = random_bases::<G1>(m, 21);
        let mut coords: Vec<Coords<G1>> = bases.iter().map(|b| G1::coords(b).unwrap()).collect();
        // Bucket 3 holds entries 3..10, paired (3, 4), (5, 6), (7, 8), and 9 alone; bucket 4
        // entries 10..14. A doubling, a cancellation, an identity on either side.
        let id = (<G1 as MsmCurve>::Base::ZERO, <G1 as MsmCurve>::Base::ZERO);
        coords[4] = coords[3];
        coords[6] = (coords[5].0, -coords[5].1);
        coords[8] = id;
        coords[10] = id;
        let kinds: Vec<PairKind> = [3, 5, 7, 10, 12]
            .iter()
            .map(|&i| classify(&coords[i], &coords[i + 1]).0)
            .collect();
        use PairKind::*;
        assert_eq!(kinds, [Double, Cancel, TakeP, TakeQ, Add]);
        let mut keys = Vec::new();
        let mut begin = Vec::new();
        for (b, &c) in cnt.iter().enumerate() {
            begin.push(keys.len());
            keys.extend(std::iter::repeat_n(40 + b as u32, c as usize));
        }
        let (_, starts, total) = halved_starts(&cnt);
        let want: Vec<_> = (0..cnt.len())
            .map(|b| {
                (begin[b]..begin[b] + cnt[b] as usize)
                    .map(|i| to_point::<G1>(&coords[i]))
                    .sum::<<G1 as MsmCurve>::Projective>()
            })
            .collect();
        let k = slot_keys(&cnt, &starts, 40, total);
        for threads in [1, 2, 3, 5, 8, 20] {
            let p = pair_level::<G1>(&coords, &cnt, &begin, 40, &starts, &k, threads);
            assert_eq!(p.len(), total);
            for b in 0..cnt.len() {
                let outs = starts[b]..starts[b] + cnt[b].div_ceil(2) as usize;
                assert!(k[outs.clone()].iter().all(|&key| key == 40 + b as u32));
                let got: <G1 as MsmCurve>::Projective = outs.map(|s| to_point::<G1>(&p[s])).sum();
                assert_eq!(got, want[b], "bucket {b}, {threads} threads");
            }
        }
    }

    /// `p` with the binned scatter in groups of `group` windows and bins of 2^`shift` keys, or
    /// wider where the group would have more bins than the kernel counts.
    fn binned(p: &Plan, group: u32, shift: u32) -> Plan {
        let mut shift = shift.min(p.bits - 1);
        while (group as usize) << (p.bits - 1 - shift) > MAX_BINS {
            shift += 1;
        }
        Plan {
            bin_windows: group,
            bin_shift: shift,
            ..*p
        }
    }

    #[test]
    fn binned_scatter_leaves_each_bucket_what_the_scatter_leaves() {
        // The model asserts, chunk by chunk, that every bucket gets the scatter's pairs and
        // every bin fills to the next one's start, and sums the binned output. These plans
        // give one to many bins a window, groups of one window to a whole pass, several tiles
        // of 1024 scalars, split tails shorter than their chunks, and the plan's own choice.
        for (n, bits) in [(1, 4), (100, 4), (3000, 10), (5000, 16)] {
            let bases = random_bases::<G1>(n, 30 + n as u64);
            let p = plan(n, bits, 1 << 30, true);
            let own = bin_windows(p.pass_windows);
            for (group, shift) in [
                (own, bin_shift(p.chunk, bits, own)),
                (1, 0),
                (2, 3),
                (p.pass_windows, 20),
            ] {
                let b = binned(&p, group, shift);
                check::<G1>(&bases, &random_scalars(n, 31), &b, "binned, random");
                check::<G1>(
                    &bases,
                    &sparse_scalars(n, 0.3, 0.3, 32),
                    &b,
                    "binned, sparse",
                );
                check::<G1>(&bases, &vec![Scalar::ONE; n], &b, "binned, all ones");
                check::<G1>(
                    &bases,
                    &random_scalars(n, 33),
                    &with_levels(&b, 2),
                    "binned and pair levels",
                );
            }
        }
        let n = 1500;
        let bases = random_bases::<G1>(n, 34);
        let least = match Plan::new(&PlanInput {
            allowance: 0,
            ..input(n, 9)
        }) {
            Err(crate::MsmError::AllowanceTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        let p = plan(n, 9, least * 3 / 2, true);
        assert!(p.chunks(n) > 1 || p.passes() > 1);
        check::<G1>(
            &bases,
            &sparse_scalars(n, 0.2, 0.2, 35),
            &binned(&p, 1, 2),
            "binned, chunked",
        );
        let g2 = random_bases::<G2>(300, 36);
        let p = plan(300, 6, 1 << 30, true);
        check::<G2>(
            &g2,
            &random_scalars(300, 37),
            &binned(&p, 2, 1),
            "binned, g2",
        );
    }

    #[test]
    fn shifted_copies_match_reference() {
        // Sets of several digit windows, each window's base read from its copy: random and
        // edge scalars, split and dense, with the binned scatter, pair levels, chunks and
        // passes, and a last set shorter than the others (43 windows of 6 bits in sets of 5).
        let n = 700;
        let bases = random_bases::<G1>(n, 40);
        let mut with_identity = bases.clone();
        for i in (0..n).step_by(5) {
            with_identity[i] = PrimeCurveAffine::identity();
        }
        let edge = [Scalar::ZERO, Scalar::ONE, -Scalar::ONE, Scalar::from(2u64)];
        let edges: Vec<Scalar> = (0..n).map(|i| edge[i % edge.len()]).collect();
        for (bits, copies) in [(6, 5), (6, 43), (8, 2), (10, 26), (4, 64)] {
            let p = Plan::new(&PlanInput {
                copies,
                ..input(n, bits)
            })
            .unwrap();
            assert_eq!(
                (p.copies, p.windows),
                (copies, crate::digits::window_count(bits).div_ceil(copies))
            );
            let table = shifted_table::<G1>(&bases, bits, copies);
            let want = crate::cpu::msm::<G1>(&bases, &random_scalars(n, 41)).unwrap();
            let own = bin_windows(p.pass_windows);
            for q in [
                p,
                binned(&p, own, bin_shift(p.chunk * copies as usize, bits, own)),
                binned(&p, 1, 0),
                with_levels(&p, 2),
            ] {
                for split in [false, true] {
                    let got = msm::<G1>(&table, &random_scalars(n, 41), &q, split);
                    assert_eq!(got, want, "bits {bits}, copies {copies}, {q:?}");
                }
            }
            let table = shifted_table::<G1>(&with_identity, bits, copies);
            let want = crate::cpu::msm::<G1>(&with_identity, &edges).unwrap();
            for split in [false, true] {
                assert_eq!(msm::<G1>(&table, &edges, &p, split), want, "edges");
            }
        }
        // Chunks and passes over sets.
        let least = match Plan::new(&PlanInput {
            allowance: 0,
            copies: 3,
            ..input(n, 7)
        }) {
            Err(crate::MsmError::AllowanceTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        let table = shifted_table::<G1>(&bases, 7, 3);
        let scalars = sparse_scalars(n, 0.2, 0.2, 42);
        let want = crate::cpu::msm::<G1>(&bases, &scalars).unwrap();
        for allowance in [least, least * 3 / 2] {
            let p = Plan::new(&PlanInput {
                allowance,
                copies: 3,
                split: true,
                ..input(n, 7)
            })
            .unwrap();
            assert!(p.chunks(n) > 1 || p.passes() > 1, "{allowance}: {p:?}");
            for q in [p, binned(&p, 1, 1)] {
                assert_eq!(msm::<G1>(&table, &scalars, &q, true), want, "{q:?}");
            }
        }
        // G2.
        let g2 = random_bases::<G2>(200, 43);
        let table = shifted_table::<G2>(&g2, 9, 4);
        let p = Plan::new(&PlanInput {
            copies: 4,
            xyzz_bytes: 384,
            ..input(200, 9)
        })
        .unwrap();
        let scalars = random_scalars(200, 44);
        let want = crate::cpu::msm::<G2>(&g2, &scalars).unwrap();
        assert_eq!(msm::<G2>(&table, &scalars, &p, false), want, "g2");
    }

    #[test]
    fn chunks_and_passes_give_the_same_result() {
        let n = 1500;
        let bases = random_bases::<G1>(n, 5);
        let scalars = sparse_scalars(n, 0.3, 0.3, 6);
        let roomy = plan(n, 9, 1 << 30, true);
        assert_eq!(roomy.passes(), 1);
        let least = match Plan::new(&PlanInput {
            allowance: 0,
            ..input(n, 9)
        }) {
            Err(crate::MsmError::AllowanceTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        for allowance in [least, least * 3 / 2, least * 4] {
            let p = plan(n, 9, allowance, true);
            assert!(p.chunks(n) > 1 || p.passes() > 1, "{allowance}: {p:?}");
            // A pass of several chunks stores each later chunk into a second bucket array
            // (the model asserts every storing flush meets an empty bucket), then adds it in.
            let pass_buckets = p.pass_windows as usize * p.buckets as usize;
            assert_eq!(
                p.sizes.chunk_points,
                if p.chunks(n) > 1 { pass_buckets } else { 0 },
                "{allowance}: {p:?}"
            );
            check::<G1>(&bases, &scalars, &p, &format!("allowance {allowance}"));
            // Pair levels after every chunk's sort, into the chunk's buckets.
            let q = with_levels(&p, 2);
            check::<G1>(
                &bases,
                &scalars,
                &q,
                &format!("allowance {allowance}, levels"),
            );
        }
    }
}
