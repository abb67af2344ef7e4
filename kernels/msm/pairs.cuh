//! Batch-affine pair levels of the MSM's bucket accumulation: a window's sorted entries are
//! summed two by two within each bucket, in affine coordinates, with one field inversion per
//! thread for all its pairs (Montgomery's batch inversion). An affine addition costs 2M + 1S
//! once its denominator is inverted and the batch adds 3M, so a pair costs about 6
//! multiplications where an XYZZ mixed addition costs 10; a level halves every bucket, and
//! after the planned number of levels the segmented reduction of msm/level.cuh (with
//! `PointSource`) adds what is left into the buckets. Instantiated by msm/msm.cu (G1).
//!
//! Layout of one level, for the nb buckets of one window: bucket b's entries are the `cnt[b]`
//! consecutive entries from `begin(b)`; entry pairs (begin + 2j, begin + 2j + 1) go to output
//! slot `out_start[b] + j`, and an odd last entry is copied to the slot after them, so the
//! output holds ceil(cnt[b] / 2) entries of bucket b from `out_start[b]`, which the host makes
//! the exclusive scan of those halved counts. Every output slot has exactly one writer: the
//! thread at the pair's (or the copy's) first entry.
#pragma once

#include "msm/level.cuh"

namespace cuzk {
namespace msm {

// Mirrors `PairParams` in crates/cuzk-msm/src/gpu/launch.rs.
struct PairParams {
    uint32_t nb;        // buckets of the window
    uint32_t key_base;  // key of the window's first bucket (keys are relative to the pass)
};

// Entries of the first level: the sort's interleaved (key, base index | sign) pairs. The
// scatter left `cursor[b]` at the end of bucket b, so its entries begin at cursor[b] − cnt[b].
template <class F>
struct SortedEntries {
    const uint32_t* pairs;
    const affine_t<mem_t<F>>* bases;
    static constexpr bool FROM_CURSORS = true;
    __device__ __forceinline__ uint32_t key(uint64_t i) const { return pairs[2 * i]; }
    __device__ __forceinline__ F x(uint64_t i) const {
        return load16(&bases[pairs[2 * i + 1] & INDEX_MASK].x);
    }
    __device__ __forceinline__ affine_t<F> point(uint64_t i) const {
        const uint32_t v = pairs[2 * i + 1];
        affine_t<F> p = load_affine<F>(&bases[v & INDEX_MASK]);
        if (v & ~INDEX_MASK) p.y = neg(p.y);
        return p;
    }
};

// Entries of later levels: what the level before wrote, keys and affine points apart, with
// bucket b's entries beginning at start[b].
template <class F>
struct KeyedEntries {
    const uint32_t* keys;
    const affine_t<mem_t<F>>* pts;
    static constexpr bool FROM_CURSORS = false;
    __device__ __forceinline__ uint32_t key(uint64_t i) const { return keys[i]; }
    __device__ __forceinline__ F x(uint64_t i) const { return load16(&pts[i].x); }
    __device__ __forceinline__ affine_t<F> point(uint64_t i) const {
        return load_affine<F>(&pts[i]);
    }
};

// Entries for the segmented reduction after the pair levels: keyed affine points, identities
// (cancelled pairs, identity bases) skipped.
template <class F>
struct PointSource {
    const affine_t<mem_t<F>>* pts;
    __device__ __forceinline__ void add_to(xyzz_t<F>& acc, uint32_t i) const {
        const affine_t<F> p = load_affine<F>(&pts[i]);
        if (is_identity(p)) return;
        add_mixed(acc, p);
    }
};

// How a pair (p, q) is summed. ADD and DOUBLE need the inverse of `den`; the rest need none.
enum PairKind : uint32_t { TAKE_P = 0, TAKE_Q = 1, CANCEL = 2, ADD = 3, DOUBLE = 4 };

template <class F>
__device__ __forceinline__ uint32_t classify(const affine_t<F>& p, const affine_t<F>& q,
                                             F& den) {
    if (is_identity(q)) return TAKE_P;
    if (is_identity(p)) return TAKE_Q;
    if (!eq(p.x, q.x)) {
        den = sub(q.x, p.x);
        return ADD;
    }
    if (eq(p.y, q.y)) {
        den = dbl(p.y);  // never zero: no point of prime order has y = 0
        return DOUBLE;
    }
    return CANCEL;  // q = −p
}

// p + q for ADD or DOUBLE, given 1 / den: λ = (y_q − y_p) / (x_q − x_p), or 3·x_p² / (2·y_p)
// when doubling; x = λ² − x_p − x_q, y = λ·(x_p − x) − y_p.
template <class F>
__device__ __forceinline__ affine_t<F> pair_sum(const affine_t<F>& p, const affine_t<F>& q,
                                                uint32_t kind, const F& inv_den) {
    F num;
    if (kind == DOUBLE) {
        const F x2 = sqr(p.x);
        num = add(dbl(x2), x2);
    } else {
        num = sub(q.y, p.y);
    }
    const F l = pmul(num, inv_den);
    affine_t<F> r;
    r.x = sub(sub(sqr(l), p.x), q.x);
    r.y = sub(pmul(l, sub(p.x, r.x)), p.y);
    return r;
}

template <class F>
__device__ __forceinline__ affine_t<F> affine_identity() {
    affine_t<F> r;
    r.x = zero<F>();
    r.y = zero<F>();
    return r;
}

// One pair level over the entries of one window, grid-stride: thread t visits positions
// lo + t, lo + t + T, ... (T threads), so that each thread's pairs form one long batch. The
// forward walk writes each slot's key, copies and inversion-free sums, and for the others
// stores the product of the thread's earlier denominators in the slot's x; one inversion
// follows; the backward walk turns each stored product into its pair's inverse and writes
// the sum over it. The forward walk reads only the x coordinates of a pair whose x are
// distinct and non-zero (an addition whatever the y: the identity is (0, 0)), two of a
// point's three 32-byte sectors; `classify` on whole points decides the rest the same way.
template <class F, class Entries>
__device__ __forceinline__ void pair_level(const Entries& in, const uint32_t* cnt,
                                           const uint32_t* start, PairParams p,
                                           const uint32_t* out_start, uint32_t* out_keys,
                                           affine_t<mem_t<F>>* out_pts) {
    auto begin = [&](uint32_t b) -> uint64_t {
        return Entries::FROM_CURSORS ? start[b] - cnt[b] : start[b];
    };
    const uint64_t lo = begin(0);
    const uint64_t hi = begin(p.nb - 1) + cnt[p.nb - 1];
    const uint64_t first = lo + thread_index(), step = thread_count();
    if (first >= hi) return;
    const uint64_t last = first + (hi - 1 - first) / step * step;
    F acc = one<F>();
#pragma unroll 1
    for (uint64_t i = first; i < hi; i += step) {
        const uint32_t key = in.key(i);
        const uint32_t b = key - p.key_base;
        const uint64_t rel = i - begin(b);
        if (rel & 1) continue;
        const uint64_t slot = out_start[b] + rel / 2;
        out_keys[slot] = key;
        if (rel + 1 == cnt[b]) {
            store16(&out_pts[slot], in.point(i));
            continue;
        }
        const F x1 = in.x(i), x2 = in.x(i + 1);
        F den;
        if (!is_zero(x1) && !is_zero(x2) && !eq(x1, x2)) {
            den = sub(x2, x1);
        } else {
            const affine_t<F> pt = in.point(i);
            const affine_t<F> qt = in.point(i + 1);
            const uint32_t kind = classify(pt, qt, den);
            if (kind < ADD) {
                store16(&out_pts[slot],
                        kind == TAKE_P ? pt : kind == TAKE_Q ? qt : affine_identity<F>());
                continue;
            }
        }
        store16(&out_pts[slot].x, acc);
        acc = pmul(acc, den);
    }
    F inv_acc = inv(acc);  // 1 / (product of every denominator of the thread)
#pragma unroll 1
    for (uint64_t i = last;; i -= step) {
        const uint32_t b = in.key(i) - p.key_base;
        const uint64_t rel = i - begin(b);
        if ((rel & 1) == 0 && rel + 1 < cnt[b]) {
            const affine_t<F> pt = in.point(i);
            const affine_t<F> qt = in.point(i + 1);
            F den;
            const uint32_t kind = classify(pt, qt, den);
            if (kind >= ADD) {
                const uint64_t slot = out_start[b] + rel / 2;
                const F inv_den = pmul(inv_acc, load16(&out_pts[slot].x));
                inv_acc = pmul(inv_acc, den);
                store16(&out_pts[slot], pair_sum(pt, qt, kind, inv_den));
            }
        }
        if (i == first) break;
    }
}

}  // namespace msm
}  // namespace cuzk
