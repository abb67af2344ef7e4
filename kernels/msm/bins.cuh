//! The binned scatter: the counting sort's placement of (bucket, point) pairs in two passes, in
//! place of the one-pass scatter (msm/sort.cu, cuzk_msm_scatter).
//!
//! The one-pass scatter writes every pair to its bucket's cursor: a random 8-byte store into a
//! buffer of gigabytes, so nearly every store dirties a sector that the L2 must evict half
//! written, and an atomic on one of millions of cursors. The binned scatter first writes each
//! pair into its *bin* (a range of 2^shift consecutive keys, about a million pairs): a block
//! counts its tile's pairs per bin in shared memory, reserves each bin's run with one atomic,
//! and writes its pairs of a bin to consecutive places. Then `place` reads the bins in order
//! and writes each pair to its bucket; the pairs the device works on at any moment come from
//! one or two bins, so their stores and cursors fall in a few megabytes that stay in the L2
//! until their sectors are whole. On an H200 the sort's phase took 20% / 17% less at 2^26 /
//! 2^27 points than the one-pass scatter (docs/perf.md, twenty-third session), with a place pass
//! that took one global atomic on the bucket's cursor for every pair; `place` now ranks each
//! chunk's pairs in shared memory and takes one global atomic per key of the chunk.
//!
//! A pass's bucket sets (a window each without shifted copies of the bases) go in groups of
//! `w_count` sets (the bins of a group fit the shared
//! counters, and the second buffer holds a group's pairs, not a pass's). Per group: `starts`
//! sets each bin's first place from the histogram's scan, `bin_pairs` fills the second buffer,
//! `place` moves them; after the last group the cursors stand at their buckets' ends, as the
//! one-pass scatter leaves them.
#pragma once

#include "msm/digits.cuh"

namespace cuzk {
namespace msm_bins {

// Mirrors `BinParams` in crates/cuzk-msm/src/gpu/launch.rs.
struct BinParams {
    uint32_t w_lo;     // the group's first bucket set, counted from the pass's first
    uint32_t w_count;  // bucket sets in the group
    uint32_t shift;    // a bin holds keys [b << shift, (b + 1) << shift) of one set
    uint32_t bins;     // bins of the group: w_count · 2^(c − 1 − shift) ≤ MAX_BINS
};
constexpr uint32_t MAX_BINS = 4096;  // MAX_BINS in crates/cuzk-msm/src/plan.rs
constexpr uint32_t BLOCK = 256;      // threads of a bin_pairs block
constexpr uint32_t ITEMS = 4;        // scalars per thread
constexpr uint32_t TILE = BLOCK * ITEMS;

// Calls f(key, bin, value) for every pair of scalar s (base index `point`) in the group's
// bucket sets: the pass's digits (msm_sort::for_each_digit) restricted to the group's windows.
template <class Fn>
__device__ __forceinline__ void group_pairs(const fr_t& s, uint32_t point,
                                            const msm_sort::DigitParams& p, const BinParams& b,
                                            Fn f) {
    const uint32_t half = 1u << (p.c - 1);
    const uint32_t per_window = half >> b.shift;
    msm_sort::DigitParams g = p;
    g.w_begin = p.w_begin + b.w_lo * p.copies;
    g.w_count = min(b.w_count * p.copies, p.w_count - b.w_lo * p.copies);
    msm_sort::for_each_digit(s, g, [&](uint32_t set, uint32_t d, bool negative, uint32_t copy) {
        f((b.w_lo + set) * half + d - 1, set * per_window + ((d - 1) >> b.shift),
          msm_sort::entry_value(p, point, copy, negative));
    });
}

// out[i] = the group's bin i's first place relative to the group's first pair, for i < bins;
// out[bins] and out[bins + 1] = the group's first and end place in the pass (from offsets,
// the histogram's exclusive scan, pass_buckets + 1 long).
__device__ __forceinline__ void starts(const uint32_t* offsets, uint32_t half, const BinParams& b,
                                       uint32_t* out) {
    const uint32_t key_lo = b.w_lo * half;
    const uint32_t base = offsets[key_lo];
    for (uint64_t i = thread_index(); i < b.bins; i += thread_count())
        out[i] = offsets[key_lo + ((uint32_t)i << b.shift)] - base;
    if (thread_index() == 0) {
        out[b.bins] = base;
        out[b.bins + 1] = offsets[key_lo + b.w_count * half];
    }
}

// Block `blockIdx.x` bins the pairs of the chunk's scalars [blockIdx.x · TILE, + TILE) ∩ [0,
// counts[0]): their bins' runs are reserved from cursor[bin] (starts above), and each pair is
// written at its run's next place in out.
__device__ __forceinline__ void bin_pairs(const fr_t* canon, const uint32_t* tail_idx,
                                          const uint32_t* counts, const msm_sort::DigitParams& p,
                                          const BinParams& b, uint32_t* cursor, uint2* out) {
    __shared__ uint32_t count[MAX_BINS];
    const uint32_t m = counts[0];
    const uint64_t first = (uint64_t)blockIdx.x * TILE;
    if (first >= m) return;  // the whole block alike
    for (uint32_t i = threadIdx.x; i < b.bins; i += BLOCK) count[i] = 0;
    __syncthreads();
    // A scalar's pair of window w: `visit` for each pair of the thread's scalars. The scalars
    // are read again for the second visit (the L1 or L2 still holds the tile) rather than
    // kept, which would take them to local memory: their limbs are indexed by window.
    auto visit = [&](auto f) {
#pragma unroll 1
        for (uint32_t q = 0; q < ITEMS; ++q) {
            const uint64_t j = first + q * BLOCK + threadIdx.x;
            if (j >= m) break;
            const uint32_t point = (p.flags & msm_sort::FLAG_INDEXED)
                                       ? tail_idx[j]
                                       : p.base_offset + (uint32_t)j;
            group_pairs(canon[j], point, p, b, f);
        }
    };
    visit([&](uint32_t, uint32_t bin, uint32_t) { atomicAdd(&count[bin], 1u); });
    __syncthreads();
    // Each bin's run: one global atomic per bin the tile reaches.
    for (uint32_t i = threadIdx.x; i < b.bins; i += BLOCK) {
        const uint32_t c = count[i];
        count[i] = c ? atomicAdd(&cursor[i], c) : 0;
    }
    __syncthreads();
    visit([&](uint32_t key, uint32_t bin, uint32_t v) {
        out[atomicAdd(&count[bin], 1u)] = make_uint2(key, v);
    });
}

// `place` below: a block of PLACE_BLOCK threads takes chunks of PLACE_CHUNK consecutive pairs,
// counting them in PLACE_KEYS shared counters (dynamic shared memory, PLACE_KEYS · 4 bytes).
// Mirrored by PLACE_BLOCK and PLACE_SHARED (PLACE_KEYS · 4) in crates/cuzk-msm/src/gpu/launch.rs
// and by PLACE_CHUNK and PLACE_KEYS in the CPU model (crates/cuzk-msm/src/model.rs).
constexpr uint32_t PLACE_BLOCK = 512;
constexpr uint32_t PLACE_ITEMS = 16;  // pairs a thread holds
constexpr uint32_t PLACE_CHUNK = PLACE_BLOCK * PLACE_ITEMS;
constexpr uint32_t PLACE_KEYS = 1u << 14;  // two bins of 2^13 keys
constexpr uint32_t NO_KEY = 0xffffffffu;   // above every key of a pass

// Moves the group's binned pairs in[0, bounds[1] − bounds[0]) to their buckets' cursors. A block
// takes chunks of PLACE_CHUNK consecutive pairs, grid-stride, so that the device works on
// neighbouring pairs (one or two bins) at any moment and their stores stay in the L2. Within a
// chunk it counts the pairs of each key in shared memory, takes each key's run from the key's
// cursor with one global atomic, and ranks the pairs into the runs in shared memory: a global
// atomic per key a chunk holds instead of one per pair (at 2^26 points a chunk of 8,192 pairs
// from a bin of 8,192 keys holds about 5,200 keys). The counters cover PLACE_KEYS keys from the
// bin of the chunk's first pair; a pair beyond them (a chunk that spans more bins than that,
// with bins of few pairs or of more keys) takes its place from its cursor alone.
__device__ __forceinline__ void place(const uint2* in, const uint32_t* bounds, uint32_t shift,
                                      uint32_t* cursor, uint2* pairs) {
    extern __shared__ uint32_t count[];  // PLACE_KEYS
    __shared__ uint32_t lo_shared, span_shared;
    const uint32_t n = bounds[1] - bounds[0];
    for (uint32_t i = threadIdx.x; i < PLACE_KEYS; i += PLACE_BLOCK) count[i] = 0;
    for (uint64_t first = (uint64_t)blockIdx.x * PLACE_CHUNK; first < n;
         first += (uint64_t)gridDim.x * PLACE_CHUNK) {
        if (threadIdx.x == 0) {
            lo_shared = in[first].x >> shift << shift;
            span_shared = 0;
        }
        __syncthreads();
        const uint32_t lo = lo_shared;
        uint2 e[PLACE_ITEMS];
        uint32_t span = 0;
#pragma unroll
        for (uint32_t q = 0; q < PLACE_ITEMS; ++q) {
            const uint64_t i = first + q * PLACE_BLOCK + threadIdx.x;
            e[q] = i < n ? in[i] : make_uint2(NO_KEY, 0);
        }
#pragma unroll
        for (uint32_t q = 0; q < PLACE_ITEMS; ++q) {
            const uint32_t d = e[q].x - lo;
            if (e[q].x != NO_KEY && d < PLACE_KEYS) {
                atomicAdd(&count[d], 1u);
                span = max(span, d + 1);
            }
        }
        if (span) atomicMax(&span_shared, span);
        __syncthreads();
        span = span_shared;
        // Each key's run: its first place, taken from the cursor.
        for (uint32_t i = threadIdx.x; i < span; i += PLACE_BLOCK) {
            const uint32_t c = count[i];
            if (c) count[i] = atomicAdd(&cursor[lo + i], c);
        }
        __syncthreads();
#pragma unroll
        for (uint32_t q = 0; q < PLACE_ITEMS; ++q) {
            if (e[q].x == NO_KEY) continue;
            const uint32_t d = e[q].x - lo;
            const uint32_t at =
                d < PLACE_KEYS ? atomicAdd(&count[d], 1u) : atomicAdd(&cursor[e[q].x], 1u);
            pairs[at] = e[q];
        }
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < span; i += PLACE_BLOCK) count[i] = 0;
    }
}

}  // namespace msm_bins
}  // namespace cuzk
