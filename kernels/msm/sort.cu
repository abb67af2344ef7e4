//! The curve-independent half of the MSM: scalars out of Montgomery form and sorted into 0, 1
//! and the rest, signed window digits, and a counting sort of (bucket, point) pairs.
//! Exported: cuzk_msm_prepare, cuzk_msm_histogram, cuzk_msm_scatter, cuzk_msm_scan_tiles,
//! cuzk_msm_scan_sums, cuzk_msm_scan_add, cuzk_msm_halve_counts, cuzk_msm_slot_keys,
//! and the binned scatter that can stand in for the one-pass scatter: cuzk_msm_bin_starts,
//! cuzk_msm_bin_pairs, cuzk_msm_place.
#include "msm/digits.cuh"
#include "msm/bins.cuh"

using cuzk::msm_sort::DigitParams;

// Converts n Montgomery scalars `in` (a piece of the chunk) to canonical form. Dense
// (split = 0): canon[canon_offset + i] is scalar i and counts[0] = canon_offset + n, so after the
// chunk's last piece counts[0] is the chunk's length. Split: zeros are dropped, the bases index
// (base_offset + i) of every scalar equal to one is appended to ones_idx (counts[1] of them),
// and every other scalar is appended to canon with its bases index in tail_idx (counts[0] of
// them). Appends are warp-aggregated: one atomic per warp from the warp's ballot bitmaps. The
// counts to append to must be zeroed beforehand.
extern "C" __global__ void cuzk_msm_prepare(const fr_t* in, uint32_t n, uint32_t base_offset,
                                            uint32_t canon_offset, uint32_t split, fr_t* canon,
                                            uint32_t* tail_idx, uint32_t* ones_idx,
                                            uint32_t* counts) {
    using namespace cuzk::msm_sort;
    const uint32_t lane = threadIdx.x & 31;
    const uint64_t stride = cuzk::thread_count();
    if (!split) {
        if (cuzk::thread_index() == 0) counts[0] = canon_offset + n;
        for (uint64_t i = cuzk::thread_index(); i < n; i += stride)
            canon[canon_offset + i] = cuzk::from_mont(in[i]);
        return;
    }
    // Warp-uniform loop so that every lane takes part in the ballots.
    for (uint64_t base = (uint64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u); base < n;
         base += stride) {
        const uint64_t i = base + lane;
        fr_t s;
        bool one = false, other = false;
        if (i < n) {
            s = cuzk::from_mont(in[i]);
            one = is_one_limbs(s);
            other = !one && !is_zero_limbs(s);
        }
        const uint32_t below = (1u << lane) - 1;
        const uint32_t other_mask = __ballot_sync(0xffffffffu, other);
        const uint32_t one_mask = __ballot_sync(0xffffffffu, one);
        uint32_t other_at = 0, one_at = 0;
        if (lane == 0) {
            if (other_mask) other_at = atomicAdd(&counts[0], __popc(other_mask));
            if (one_mask) one_at = atomicAdd(&counts[1], __popc(one_mask));
        }
        other_at = __shfl_sync(0xffffffffu, other_at, 0);
        one_at = __shfl_sync(0xffffffffu, one_at, 0);
        if (other) {
            const uint32_t at = other_at + __popc(other_mask & below);
            canon[at] = s;
            tail_idx[at] = base_offset + (uint32_t)i;
        }
        if (one) ones_idx[one_at + __popc(one_mask & below)] = base_offset + (uint32_t)i;
    }
}

// hist[set·2^(c−1) + |d| − 1] += 1 for every non-zero digit d of the canonical scalars
// canon[from .. counts[0]) (from = 0: all of them; a piece's first index: the piece prepare
// just converted, so the histogram of a chunk can grow piece by piece while the next piece
// uploads), set being the digit window's bucket set (msm/digits.cuh, DigitParams).
extern "C" __global__ void cuzk_msm_histogram(const fr_t* canon, const uint32_t* counts,
                                              uint32_t from, DigitParams p, uint32_t* hist) {
    using namespace cuzk::msm_sort;
    const uint32_t m = counts[0];
    const uint32_t half = 1u << (p.c - 1);
    for (uint64_t j = from + cuzk::thread_index(); j < m; j += cuzk::thread_count()) {
        const fr_t s = canon[j];
        for_each_digit(s, p, [&](uint32_t set, uint32_t d, bool, uint32_t) {
            atomicAdd(&hist[set * half + d - 1], 1u);
        });
    }
}

// Places every (bucket, point) pair at cursor[bucket]++ (cursor = the exclusive scan of the
// histogram): pairs[pos] = (bucket, entry_value), one 8-byte store so that each pair dirties
// one sector, not two. Windows go in batches: all the batch's atomics are issued before any
// store waits on one, so their latencies overlap.
extern "C" __global__ void cuzk_msm_scatter(const fr_t* canon, const uint32_t* tail_idx,
                                            const uint32_t* counts, DigitParams p,
                                            uint32_t* cursor, uint2* pairs) {
    using namespace cuzk::msm_sort;
    constexpr uint32_t BATCH = 8;
    const uint32_t m = counts[0];
    const uint32_t half = 1u << (p.c - 1);
    const uint32_t w_end = p.w_begin + p.w_count;
    for (uint64_t j = cuzk::thread_index(); j < m; j += cuzk::thread_count()) {
        const fr_t s = canon[j];
        const uint32_t point =
            (p.flags & FLAG_INDEXED) ? tail_idx[j] : p.base_offset + (uint32_t)j;
        uint32_t carry = 0, set = 0, copy = 0;
#pragma unroll 1
        for (uint32_t w0 = 0; w0 < w_end; w0 += BATCH) {
            uint32_t key[BATCH], val[BATCH], pos[BATCH];
#pragma unroll
            for (uint32_t b = 0; b < BATCH; ++b) {
                const uint32_t w = w0 + b;
                key[b] = UINT32_MAX;
                if (w < w_end) {
                    bool negative;
                    const uint32_t d = next_digit(s, w, p.c, carry, negative);
                    if (w >= p.w_begin) {
                        if (d != 0) {
                            key[b] = set * half + d - 1;
                            val[b] = entry_value(p, point, copy, negative);
                        }
                        if (++copy == p.copies) {
                            copy = 0;
                            ++set;
                        }
                    }
                }
            }
#pragma unroll
            for (uint32_t b = 0; b < BATCH; ++b)
                if (key[b] != UINT32_MAX) pos[b] = atomicAdd(&cursor[key[b]], 1u);
#pragma unroll
            for (uint32_t b = 0; b < BATCH; ++b)
                if (key[b] != UINT32_MAX) pairs[pos[b]] = make_uint2(key[b], val[b]);
        }
    }
}

// Exclusive scan, step 1 of 3: out[i] = sum of in[tile start .. i) within each tile of
// SCAN_TILE elements, tile_sums[tile] = the tile's total. blockDim.x = SCAN_BLOCK.
extern "C" __global__ void cuzk_msm_scan_tiles(const uint32_t* in, uint32_t len, uint32_t* out,
                                               uint32_t* tile_sums) {
    using namespace cuzk::msm_sort;
    const uint64_t start = (uint64_t)blockIdx.x * SCAN_TILE + threadIdx.x * SCAN_ITEMS;
    uint32_t items[SCAN_ITEMS];
    uint32_t sum = 0;
#pragma unroll
    for (uint32_t k = 0; k < SCAN_ITEMS; ++k) {
        items[k] = start + k < len ? in[start + k] : 0;
        sum += items[k];
    }
    uint32_t total;
    uint32_t run = block_exclusive_scan(sum, total);
#pragma unroll
    for (uint32_t k = 0; k < SCAN_ITEMS; ++k) {
        if (start + k < len) out[start + k] = run;
        run += items[k];
    }
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// Step 2: exclusive scan of the tile sums in place, by one block; *total = the grand total.
extern "C" __global__ void cuzk_msm_scan_sums(uint32_t* tile_sums, uint32_t tiles,
                                              uint32_t* total) {
    using namespace cuzk::msm_sort;
    const uint32_t per = (tiles + blockDim.x - 1) / blockDim.x;
    const uint32_t start = threadIdx.x * per;
    uint32_t sum = 0;
    for (uint32_t k = 0; k < per && start + k < tiles; ++k) sum += tile_sums[start + k];
    uint32_t grand;
    uint32_t run = block_exclusive_scan(sum, grand);
    for (uint32_t k = 0; k < per && start + k < tiles; ++k) {
        const uint32_t v = tile_sums[start + k];
        tile_sums[start + k] = run;
        run += v;
    }
    if (threadIdx.x == 0) *total = grand;
}

// Step 3: adds each tile's offset to its elements.
extern "C" __global__ void cuzk_msm_scan_add(uint32_t* out, uint32_t len,
                                             const uint32_t* tile_sums) {
    using namespace cuzk::msm_sort;
    for (uint64_t i = cuzk::thread_index(); i < len; i += cuzk::thread_count())
        out[i] += tile_sums[i / SCAN_TILE];
}

// The bucket counts after a pair level (msm/pairs.cuh): out[b] = ceil(in[b] / 2) for b < n.
extern "C" __global__ void cuzk_msm_halve_counts(const uint32_t* in, uint32_t n, uint32_t* out) {
    for (uint64_t i = cuzk::thread_index(); i < n; i += cuzk::thread_count())
        out[i] = in[i] / 2 + (in[i] & 1);
}

// The keys of a pair level's output slots (msm/pairs.cuh): bucket b < n's half[b] =
// ceil(cnt[b] / 2) slots from out_start[b] (the exclusive scan of `half`) get key_base + b,
// before the level runs, so that its threads can take slots rather than entries. A thread per
// slot, grid-stride over the out_start[n − 1] + half[n − 1] slots: slot s belongs to the last
// bucket whose start is at most s (a bucket without slots starts where the next does), found
// by binary search, so the work is spread evenly however the entries fall into buckets.
extern "C" __global__ void cuzk_msm_slot_keys(const uint32_t* half, const uint32_t* out_start,
                                              uint32_t n, uint32_t key_base, uint32_t* keys) {
    const uint64_t total = (uint64_t)out_start[n - 1] + half[n - 1];
    for (uint64_t s = cuzk::thread_index(); s < total; s += cuzk::thread_count()) {
        uint32_t lo = 0, hi = n;  // out_start[lo] <= s, and s < out_start[hi] (or hi = n)
        while (hi - lo > 1) {
            const uint32_t mid = (lo + hi) / 2;
            if (out_start[mid] <= s) lo = mid; else hi = mid;
        }
        keys[s] = key_base + lo;
    }
}

// The binned scatter (msm/bins.cuh), a window group at a time. bin_starts: a thread per bin
// (grid-stride), out gets bins + 2 values; bin_pairs: ceil(len / TILE) blocks of BLOCK
// threads for a chunk of len scalars; place: blocks of PLACE_BLOCK threads, as many as fit the
// SMs at once, with PLACE_KEYS · 4 bytes of dynamic shared memory, grid-stride over chunks.
using cuzk::msm_bins::BinParams;
extern "C" __global__ void cuzk_msm_bin_starts(const uint32_t* offsets, uint32_t half, BinParams b,
                                               uint32_t* out) {
    cuzk::msm_bins::starts(offsets, half, b, out);
}
extern "C" __global__ void __launch_bounds__(cuzk::msm_bins::BLOCK)
    cuzk_msm_bin_pairs(const fr_t* canon, const uint32_t* tail_idx, const uint32_t* counts,
                       DigitParams p, BinParams b, uint32_t* cursor, uint2* out) {
    cuzk::msm_bins::bin_pairs(canon, tail_idx, counts, p, b, cursor, out);
}
extern "C" __global__ void __launch_bounds__(cuzk::msm_bins::PLACE_BLOCK)
    cuzk_msm_place(const uint2* in, const uint32_t* bounds, uint32_t shift, uint32_t* cursor,
                   uint2* pairs) {
    cuzk::msm_bins::place(in, bounds, shift, cursor, pairs);
}
