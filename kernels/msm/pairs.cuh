//! Batch-affine pair levels of the MSM's bucket accumulation: a window group's sorted entries
//! are summed two by two within each bucket, in affine coordinates, with one field inversion per
//! thread for all its pairs (Montgomery's batch inversion). An affine addition costs 2M + 1S
//! once its denominator is inverted and the batch adds 3M, so a pair costs about 6
//! multiplications where an XYZZ mixed addition costs 10; a level halves every bucket, and
//! after the planned number of levels the segmented reduction of msm/level.cuh (with
//! `PointSource`) adds what is left into the buckets. Instantiated by msm/msm.cu: G1 a thread
//! per slot, G2 a lane pair per slot (`fp2_lane_t`: both lanes walk the same slots, and every
//! decision combines both halves, so a pair never splits).
//!
//! Layout of one level, for the nb buckets of a group of windows (the host runs the windows of a
//! pass in groups, their buckets one range of keys): bucket b's entries are the `cnt[b]`
//! consecutive entries from `begin(b)`; entry pairs (begin + 2j, begin + 2j + 1) go to output
//! slot `out_start[b] + j`, and an odd last entry is copied to the slot after them, so the
//! output holds ceil(cnt[b] / 2) entries of bucket b from `out_start[b]`, which the host makes
//! the exclusive scan of those halved counts. `cuzk_msm_slot_keys` (msm/sort.cu) writes every
//! slot's key first; the level then has a thread for each slot in turn, its only writer.
#pragma once

#include "msm/level.cuh"

namespace cuzk {
namespace msm {

// Mirrors `PairParams` in crates/cuzk-msm/src/gpu/launch.rs.
struct PairParams {
    uint32_t nb;        // buckets of the window group
    uint32_t key_base;  // key of the group's first bucket (keys are relative to the pass)
};

// Entries of the first level: the sort's interleaved (key, base index | sign) pairs. The
// scatter left `cursor[b]` at the end of bucket b, so its entries begin at cursor[b] − cnt[b].
template <class F>
struct SortedEntries {
    const uint32_t* pairs;
    const affine_t<mem_t<F>>* bases;
    static constexpr bool FROM_CURSORS = true;
    // An entry's reference: the sort's value, base index | sign.
    using Ref = uint32_t;
    __device__ __forceinline__ Ref ref(uint64_t i) const { return pairs[2 * i + 1]; }
    __device__ __forceinline__ F x(Ref v) const {
        return load_coord<F>(&bases[v & INDEX_MASK].x);
    }
    __device__ __forceinline__ affine_t<F> point(Ref v) const {
        affine_t<F> p = load_affine<F>(&bases[v & INDEX_MASK]);
        if (v & ~INDEX_MASK) p.y = neg(p.y);
        return p;
    }
};

// Entries of later levels: the affine points the level before wrote, bucket b's beginning at
// start[b].
template <class F>
struct KeyedEntries {
    const affine_t<mem_t<F>>* pts;
    static constexpr bool FROM_CURSORS = false;
    // An entry's reference: its position.
    using Ref = uint64_t;
    __device__ __forceinline__ Ref ref(uint64_t i) const { return i; }
    __device__ __forceinline__ F x(Ref i) const { return load_coord<F>(&pts[i].x); }
    __device__ __forceinline__ affine_t<F> point(Ref i) const { return load_affine<F>(&pts[i]); }
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

// One work item's walk over its slots of a pair level, s0, s0 + d, s0 + 2d, ... (d = ±T, `n`
// slots), yielding each slot's entry references: the slot's key (its bucket b), b's bounds
// (cnt, begin, out_start), then the entries' references (the sort's values at the first
// level). Issuing these loads slots ahead measured no faster (docs/perf.md, sixteenth
// session): the walk waits on the coordinates and on its chain of products, not on them.
template <class Entries>
struct SlotWalk {
    using Ref = typename Entries::Ref;
    struct Slot {
        uint64_t at;  // the output slot
        Ref a, b;     // its entries (b = a for a copy)
        bool pair;    // whether it has two
    };
    Entries in;
    const uint32_t* keys;
    const uint32_t* cnt;
    const uint32_t* start;
    const uint32_t* out_start;
    uint32_t key_base;
    uint64_t s, d, left;  // the next slot to yield, the stride (two's complement), slots left

    // The next slot (`left` must be non-zero): slot out_start[b] + j takes entries begin(b) + 2j
    // and, unless that is the bucket's odd last one, the next.
    __device__ __forceinline__ Slot take() {
        const uint32_t b = keys[s] - key_base;
        const uint32_t c = cnt[b];
        const uint64_t bg = Entries::FROM_CURSORS ? start[b] - c : start[b];
        const uint64_t rel = 2 * (s - out_start[b]);
        Slot r;
        r.at = s;
        r.pair = rel + 1 < c;
        r.a = in.ref(bg + rel);
        r.b = r.pair ? in.ref(bg + rel + 1) : r.a;
        s += d;
        --left;
        return r;
    }
};

// One pair level over the entries of one window group, grid-stride over its output slots: work item
// t (a thread, or a lane pair for fp2_lane_t) takes slots t, t + T, ... (T items), so that
// each item's pairs form one long batch and every lane of a warp has a slot to fill (a slot is
// one pair or one copy). The slot's key is already in `keys` (`cuzk_msm_slot_keys`), which
// names its bucket b; slot out_start[b] + j takes the bucket's entries begin(b) + 2j and,
// unless that is its odd last one, the next (`SlotWalk`). The forward walk writes copies and
// inversion-free sums, and for the others stores the product of the item's earlier
// denominators in the slot's x; one inversion follows; the backward walk turns each stored
// product into its pair's inverse and writes the sum over it. The forward walk reads only the
// x coordinates of a pair whose x are distinct and non-zero (an addition whatever the y: the
// identity is (0, 0)), two of a point's three 32-byte sectors; `classify` on whole points
// decides the rest the same way. (Two chains of slots per item, for two independent products
// per step, measured slower: docs/perf.md, sixteenth session.)
template <class F, class Entries>
__device__ __forceinline__ void pair_level(const Entries& in, const uint32_t* cnt,
                                           const uint32_t* start, PairParams p,
                                           const uint32_t* out_start, const uint32_t* keys,
                                           affine_t<mem_t<F>>* out_pts) {
    using Walk = SlotWalk<Entries>;
    const uint32_t nb1 = p.nb - 1;
    const uint64_t slots = out_start[nb1] + cnt[nb1] / 2 + (cnt[nb1] & 1);
    const uint64_t first = item_index<F>(), step = thread_count() / lane_layout<F>::count;
    if (first >= slots) return;
    const uint64_t n = (slots - 1 - first) / step + 1;
    const uint64_t last = first + (n - 1) * step;
    F acc = one<F>();
    Walk fwd{in, keys, cnt, start, out_start, p.key_base, first, step, n};
#pragma unroll 1
    while (fwd.left > 0) {
        const typename Walk::Slot t = fwd.take();
        if (!t.pair) {
            store_affine<F>(&out_pts[t.at], in.point(t.a));
            continue;
        }
        const F x1 = in.x(t.a), x2 = in.x(t.b);
        F den;
        if (!is_zero(x1) && !is_zero(x2) && !eq(x1, x2)) {
            den = sub(x2, x1);
        } else {
            const affine_t<F> pt = in.point(t.a);
            const affine_t<F> qt = in.point(t.b);
            const uint32_t kind = classify(pt, qt, den);
            if (kind < ADD) {
                store_affine<F>(&out_pts[t.at], kind == TAKE_P   ? pt
                                                : kind == TAKE_Q ? qt
                                                                 : affine_identity<F>());
                continue;
            }
        }
        store_coord<F>(&out_pts[t.at].x, acc);
        acc = pmul(acc, den);
    }
    F inv_acc = inv(acc);  // 1 / (product of every denominator of the item)
    Walk back{in, keys, cnt, start, out_start, p.key_base, last, 0 - step, n};
#pragma unroll 1
    while (back.left > 0) {
        const typename Walk::Slot t = back.take();
        if (!t.pair) continue;
        const affine_t<F> pt = in.point(t.a);
        const affine_t<F> qt = in.point(t.b);
        F den;
        const uint32_t kind = classify(pt, qt, den);
        if (kind >= ADD) {
            const F inv_den = pmul(inv_acc, load_coord<F>(&out_pts[t.at].x));
            inv_acc = pmul(inv_acc, den);
            store_affine<F>(&out_pts[t.at], pair_sum(pt, qt, kind, inv_den));
        }
    }
}

}  // namespace msm
}  // namespace cuzk
