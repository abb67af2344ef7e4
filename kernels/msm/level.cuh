//! The MSM's bucket accumulation: one level of a balanced segmented reduction over sorted
//! (key, entry) pairs, for G1 (fp_t, a thread per point) and G2 (fp2_lane_t, a pair of lanes
//! per point), with entries read from resident affine bases or from an earlier level's partial
//! sums. Instantiated by msm/msm.cu.
#pragma once

#include "curve/xyzz.cuh"

namespace cuzk {
namespace msm {

// Mirrors `LevelParams` in crates/cuzk-msm/src/gpu/launch.rs.
struct LevelParams {
    uint32_t m_value;  // entries, when not read from *m_in
    uint32_t span;     // entries per thread
    uint32_t key_div;  // without a key array, entry i belongs to key i / key_div
    uint32_t flags;
    uint32_t stride;   // entry i's key is keys[i·stride] and its value vals[i·stride]
};
constexpr uint32_t FLAG_KEYS = 1;       // keys[] holds each entry's key
constexpr uint32_t FLAG_M_FROM_PTR = 2; // the entry count is *m_in (computed on the device)
// The buckets this chain's keys name start at infinity and no other chain flushes into them
// (chains over other keys may share the array): every key's complete run closes in one slice
// of one level, so a bucket is flushed at most once with anything but infinity, and the flush
// stores the run's sum instead of loading the bucket and adding to it (a random 4-coordinate
// load a lane's warp waits for, and a general addition, on every flush).
constexpr uint32_t FLAG_STORE = 4;

constexpr uint32_t INDEX_MASK = 0x7fffffffu;

// The work item of this thread (a point's worth of threads share one) and whether this thread
// writes the item's scalar outputs (keys, counts), which all its threads know alike.
template <class F>
__device__ __forceinline__ uint64_t item_index() {
    return thread_index() / lane_layout<F>::count;
}
template <class F>
__device__ __forceinline__ bool item_leader() {
    return thread_index() % lane_layout<F>::count == 0;
}

// Entries are sorted base indices (sign in the top bit) into resident affine bases.
template <class F>
struct AffineSource {
    const uint32_t* vals;
    uint32_t stride;
    const affine_t<mem_t<F>>* bases;
    // An entry's base as loaded, and its value (index | sign).
    struct Entry {
        affine_t<F> p;
        uint32_t v;
    };
    __device__ __forceinline__ Entry fetch(uint32_t i) const {
        const uint32_t v = vals[(uint64_t)i * stride];
        return Entry{load_affine<F>(&bases[v & INDEX_MASK]), v};
    }
    __device__ __forceinline__ void add_entry(xyzz_t<F>& acc, Entry e) const {
        if (is_identity(e.p)) return;
        if (e.v & ~INDEX_MASK) e.p.y = neg(e.p.y);
        add_mixed(acc, e.p);
    }
    __device__ __forceinline__ void add_to(xyzz_t<F>& acc, uint32_t i) const { add_entry(acc, fetch(i)); }
};

// Sources whose next entry the level loads while it adds the current one: G1's bases, a random
// read that each addition otherwise waits for (G1 accumulation about 4% faster on an H100:
// docs/perf.md, twenty-second session). G2's lane pairs and the XYZZ sources do not.
template <class Source>
struct Prefetched {
    static constexpr bool value = false;
};
template <>
struct Prefetched<AffineSource<fp_t>> {
    static constexpr bool value = true;
};

// Lane pairs: as above, except that a pair whose accumulator was at infinity still runs the
// general addition (keeping the warp whole for its shuffles) and then takes the point itself,
// re-read rather than kept in registers through the addition.
template <>
struct AffineSource<fp2_lane_t> {
    const uint32_t* vals;
    uint32_t stride;
    const affine_t<fp2_t>* bases;
    __device__ __forceinline__ affine_t<fp2_lane_t> point(uint32_t v) const {
        affine_t<fp2_lane_t> p = load_affine<fp2_lane_t>(&bases[v & INDEX_MASK]);
        if (v & ~INDEX_MASK) p.y = neg(p.y);
        return p;
    }
    __device__ __forceinline__ void add_to(xyzz_t<fp2_lane_t>& acc, uint32_t i) const {
        const uint32_t v = vals[(uint64_t)i * stride];
        {
            const affine_t<fp2_lane_t> p = point(v);
            if (is_identity(p)) return;
            if (!add_mixed_or_start(acc, p)) return;
        }
        from_affine(acc, point(v));
    }
};

// Entries are partial sums from an earlier level.
template <class F>
struct XyzzSource {
    const xyzz_t<mem_t<F>>* pts;
    __device__ __forceinline__ void add_to(xyzz_t<F>& acc, uint32_t i) const {
        add_xyzz(acc, load_xyzz<F>(&pts[i]));
    }
};

template <class F>
__device__ __forceinline__ void flush(xyzz_t<mem_t<F>>* buckets, uint32_t key,
                                      const xyzz_t<F>& acc, bool store) {
    if (is_inf(acc)) return;
    if (store) {
        store_xyzz<F>(&buckets[key], acc);
        return;
    }
    xyzz_t<F> b = load_xyzz<F>(&buckets[key]);
    add_xyzz(b, acc);
    store_xyzz<F>(&buckets[key], b);
}

// Lane pairs flush through a call that takes the run's sum by value. Flushes are rare (one per
// bucket run), so keeping the full addition out of line keeps the accumulation loop's registers
// to what the mixed addition needs; and a by-value argument, unlike a reference, does not pin
// the caller's accumulator to local memory for the whole loop.
__device__ __noinline__ void flush_call(xyzz_t<fp2_t>* bucket, xyzz_t<fp2_lane_t> acc) {
    xyzz_t<fp2_lane_t> b = load_xyzz<fp2_lane_t>(bucket);
    add_xyzz(b, acc);
    store_xyzz<fp2_lane_t>(bucket, b);
}
template <>
__device__ __forceinline__ void flush<fp2_lane_t>(xyzz_t<fp2_t>* buckets, uint32_t key,
                                                  const xyzz_t<fp2_lane_t>& acc, bool store) {
    if (is_inf(acc)) return;
    if (store) {
        store_xyzz<fp2_lane_t>(&buckets[key], acc);
        return;
    }
    flush_call(&buckets[key], acc);
}

// One level of a balanced segmented reduction: buckets[key] += Σ entries of that key (= with
// FLAG_STORE).
//
// Entries are sorted by key; thread t takes the L = span entries [t·L, t·L + L) whatever their
// keys, so a bucket holding most of the points (all-one scalars, repeated bases) is shared by
// many threads instead of serialising one. A run of equal keys that lies wholly inside a slice
// is added into its bucket; only the slice's first and last run can continue into a
// neighbouring slice, and those go to output slots 2t and 2t+1 as (key, partial sum). Unused
// slots get the key of their neighbour run and the point at infinity, so the 2·T outputs are
// again sorted by key and the next level reduces them the same way, until one thread is left.
// A key's complete run lies in one slice, so no two threads of a level touch one bucket; every
// entry reaches its bucket exactly once, through a chain of partial sums. "Thread" above is a
// work item: the lanes of a pair (G2) take the same slice, so every branch below is uniform
// across a pair.
//
// `level_inline` is always inlined into its kernel; `level` leaves that to the compiler, which
// makes it a call for G1. G2 inlines it: as a call, its by-reference parameters are re-read
// from local memory inside the loop once registers run short.
template <class F, class Source>
__device__ __forceinline__ void level_inline(const uint32_t* keys, const Source& src,
                                             const uint32_t* m_in, const LevelParams& p,
                                             xyzz_t<mem_t<F>>* buckets, uint32_t* out_keys,
                                             xyzz_t<mem_t<F>>* out_pts, uint32_t* m_out) {
    const uint32_t m = (p.flags & FLAG_M_FROM_PTR) ? *m_in : p.m_value;
    const uint32_t span = p.span;
    const uint64_t threads = ((uint64_t)m + span - 1) / span;
    const uint64_t t = item_index<F>();
    const bool leader = item_leader<F>();
    if (t == 0 && leader) *m_out = (uint32_t)(2 * threads);
    if (t >= threads) return;
    const bool keyed = (p.flags & FLAG_KEYS) != 0;
    const bool store = (p.flags & FLAG_STORE) != 0;
    auto key = [&](uint32_t i) -> uint32_t {
        return keyed ? keys[(uint64_t)i * p.stride] : i / p.key_div;
    };

    const uint32_t s = (uint32_t)(t * span);
    const uint32_t e = min(s + span, m);
    const uint32_t first_key = key(s);
    const bool head_partial = s > 0 && key(s - 1) == first_key;
    uint32_t cur = first_key;
    bool first_run = true, wrote_a = false, wrote_b = false;
    xyzz_t<F> acc;
    set_inf(acc);
    // Entry i's key closes the run of `cur` when it differs.
    auto boundary = [&](uint32_t i) {
        const uint32_t k = key(i);
        if (k != cur) {
            // The run of `cur` ends inside this slice.
            if (first_run && head_partial) {
                if (leader) out_keys[2 * t] = cur;
                store_xyzz<F>(&out_pts[2 * t], acc);
                wrote_a = true;
            } else {
                flush(buckets, cur, acc, store);
            }
            first_run = false;
            cur = k;
            set_inf(acc);
        }
    };
    if constexpr (Prefetched<Source>::value) {
        auto next = src.fetch(s);
#pragma unroll 1
        for (uint32_t i = s; i < e; ++i) {
            const auto entry = next;
            if (i + 1 < e) next = src.fetch(i + 1);
            boundary(i);
            src.add_entry(acc, entry);
        }
    } else {
#pragma unroll 1
        for (uint32_t i = s; i < e; ++i) {
            boundary(i);
            src.add_to(acc, i);
        }
    }
    const bool tail_partial = e < m && key(e) == cur;
    if (first_run ? (head_partial || tail_partial) : tail_partial) {
        const uint64_t slot = first_run ? 2 * t : 2 * t + 1;
        if (leader) out_keys[slot] = cur;
        store_xyzz<F>(&out_pts[slot], acc);
        (first_run ? wrote_a : wrote_b) = true;
    } else {
        flush(buckets, cur, acc, store);
    }
    xyzz_t<F> inf;
    set_inf(inf);
    if (!wrote_a) {
        if (leader) out_keys[2 * t] = first_key;
        store_xyzz<F>(&out_pts[2 * t], inf);
    }
    if (!wrote_b) {
        if (leader) out_keys[2 * t + 1] = cur;
        store_xyzz<F>(&out_pts[2 * t + 1], inf);
    }
}

template <class F, class Source>
__device__ void level(const uint32_t* keys, const Source& src, const uint32_t* m_in,
                      const LevelParams& p, xyzz_t<mem_t<F>>* buckets, uint32_t* out_keys,
                      xyzz_t<mem_t<F>>* out_pts, uint32_t* m_out) {
    level_inline<F>(keys, src, m_in, p, buckets, out_keys, out_pts, m_out);
}

}  // namespace msm
}  // namespace cuzk
