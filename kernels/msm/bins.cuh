//! The binned scatter: the counting sort's placement of (bucket, point) pairs in two passes, in
//! place of the one-pass scatter (msm/sort.cu, cuzk_msm_scatter).
//!
//! The one-pass scatter writes every pair to its bucket's cursor: a random 8-byte store into a
//! buffer of gigabytes, so nearly every store dirties a sector that the L2 must evict half
//! written, and an atomic on one of millions of cursors. The binned scatter first writes each
//! pair into its *bin* (a range of 2^shift consecutive keys, about a million pairs): a block
//! counts its tile's pairs per bin in shared memory, reserves each bin's run with one atomic,
//! and writes its pairs of a bin to consecutive places. Then `place` reads the bins in order
//! and writes each pair to its bucket's cursor, as the one-pass scatter does; but the pairs the
//! device works on at any moment come from one or two bins, so their stores and cursors fall in
//! a few megabytes that stay in the L2 until their sectors are whole. On an H200 the sort's
//! phase took 20% / 17% less at 2^26 / 2^27 points (docs/perf.md, twenty-third session): the
//! place pass runs at about 25 G pairs/s, twice the one-pass rate, most likely bound by the
//! global atomic each pair still takes.
//!
//! A pass's windows go in groups of `w_count` windows (the bins of a group fit the shared
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
    uint32_t w_lo;     // the group's first window, counted from the pass's first
    uint32_t w_count;  // windows in the group
    uint32_t shift;    // a bin holds keys [b << shift, (b + 1) << shift) of one window
    uint32_t bins;     // bins of the group: w_count · 2^(c − 1 − shift) ≤ MAX_BINS
};
constexpr uint32_t MAX_BINS = 4096;  // MAX_BINS in crates/cuzk-msm/src/plan.rs
constexpr uint32_t BLOCK = 256;      // threads of a bin_pairs block
constexpr uint32_t ITEMS = 4;        // scalars per thread
constexpr uint32_t TILE = BLOCK * ITEMS;

// Calls f(key, bin, value) for every pair of scalar s (base index `point`) in the group's
// windows: the pass's digits (msm_sort::for_each_digit) restricted to the group.
template <class Fn>
__device__ __forceinline__ void group_pairs(const fr_t& s, uint32_t point,
                                            const msm_sort::DigitParams& p, const BinParams& b,
                                            Fn f) {
    const uint32_t half = 1u << (p.c - 1);
    const uint32_t per_window = half >> b.shift;
    msm_sort::DigitParams g = p;
    g.w_begin = p.w_begin + b.w_lo;
    g.w_count = b.w_count;
    msm_sort::for_each_digit(s, g, [&](uint32_t w, uint32_t d, bool negative) {
        f((b.w_lo + w) * half + d - 1, w * per_window + ((d - 1) >> b.shift),
          point | (negative ? msm_sort::SIGN_BIT : 0u));
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

// Moves the group's binned pairs in[0, bounds[1] − bounds[0]) to their buckets' cursors, in
// order (a grid-stride loop, so that the device works on neighbouring pairs at any moment).
__device__ __forceinline__ void place(const uint2* in, const uint32_t* bounds, uint32_t* cursor,
                                      uint2* pairs) {
    const uint32_t n = bounds[1] - bounds[0];
    for (uint64_t i = thread_index(); i < n; i += thread_count()) {
        const uint2 e = in[i];
        pairs[atomicAdd(&cursor[e.x], 1u)] = e;
    }
}

}  // namespace msm_bins
}  // namespace cuzk
