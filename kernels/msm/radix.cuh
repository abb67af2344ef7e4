//! An LSD radix sort of a chunk's (key, value) pairs, 8 bits of the key a pass, in place of the
//! counting sort's scatter (msm/sort.cu). The scatter writes each pair to its bucket's cursor, a
//! random 8-byte store and an atomic per digit; a radix pass writes each tile's pairs of one
//! digit to consecutive places instead (16 on average for a tile of 4096 and 256 digits), which
//! the L2 merges into whole sectors. Every pass is stable, so after the passes that cover the
//! key the pairs are sorted by key, and within a key in the order they were generated.
//!
//! A pass over n pairs in tiles of TILE: `tile_histogram` counts each tile's digits into
//! counts[d · tiles + tile]; the exclusive scan of that digit-major matrix gives every (digit,
//! tile) its first output place; `tile_scatter` ranks each tile's pairs stably (rounds of one
//! pair per thread, in order; within a round by warp, then by lane) and writes them there.
#pragma once

#include "msm/digits.cuh"

namespace cuzk {
namespace msm_radix {

constexpr uint32_t RADIX_BITS = 8;
constexpr uint32_t RADIX = 1u << RADIX_BITS;  // digits per pass
constexpr uint32_t BLOCK = RADIX;             // threads per block: one per digit
constexpr uint32_t ROUNDS = 16;               // pairs per thread per tile
constexpr uint32_t TILE = BLOCK * ROUNDS;     // pairs per tile (RADIX_TILE in plan.rs)
constexpr uint32_t WARPS = BLOCK / 32;
constexpr uint32_t NO_DIGIT = RADIX;  // a thread past the last pair

__device__ __forceinline__ uint32_t digit_of(uint32_t key, uint32_t shift) {
    return (key >> shift) & (RADIX - 1);
}

// Block `tile` counts the digits of pairs [tile · TILE, (tile + 1) · TILE) ∩ [0, n).
__device__ __forceinline__ void tile_histogram(const uint2* in, uint32_t n, uint32_t shift,
                                               uint32_t tiles, uint32_t* counts) {
    __shared__ uint32_t hist[RADIX];
    const uint32_t tile = blockIdx.x, t = threadIdx.x;
    hist[t] = 0;
    __syncthreads();
#pragma unroll 4
    for (uint32_t r = 0; r < ROUNDS; ++r) {
        const uint64_t i = (uint64_t)tile * TILE + r * BLOCK + t;
        if (i < n) atomicAdd(&hist[digit_of(in[i].x, shift)], 1u);
    }
    __syncthreads();
    counts[(uint64_t)t * tiles + tile] = hist[t];
}

// Block `tile` writes its pairs to out, each at offsets[d · tiles + tile] (the scan of the
// counts) plus its stable rank among the tile's pairs of digit d.
__device__ __forceinline__ void tile_scatter(const uint2* in, uint32_t n, uint32_t shift,
                                             uint32_t tiles, const uint32_t* offsets,
                                             uint2* out) {
    // base[d]: the next place of digit d. warp_hist[buf][w][d]: warp w's count of digit d in
    // this round, then the place of its first such pair; two buffers alternate by round, so
    // that each round clears the next one's while it is unused.
    __shared__ uint32_t base[RADIX];
    __shared__ uint32_t warp_hist[2][WARPS][RADIX];
    const uint32_t tile = blockIdx.x, t = threadIdx.x;
    const uint32_t warp = t / 32, lane = t % 32;
    const uint32_t lower = (1u << lane) - 1;  // the lanes below this one
    base[t] = offsets[(uint64_t)t * tiles + tile];
#pragma unroll
    for (uint32_t w = 0; w < WARPS; ++w) warp_hist[0][w][t] = 0;
    __syncthreads();
#pragma unroll 1
    for (uint32_t r = 0; r < ROUNDS; ++r) {
        const uint32_t buf = r & 1;
        const uint64_t i = (uint64_t)tile * TILE + r * BLOCK + t;
        const bool valid = i < n;
        const uint2 e = valid ? in[i] : make_uint2(0, 0);
        const uint32_t d = valid ? digit_of(e.x, shift) : NO_DIGIT;
        const uint32_t peers = __match_any_sync(0xffffffffu, d);
        const uint32_t rank = __popc(peers & lower);
        if (valid && rank == 0) warp_hist[buf][warp][d] = __popc(peers);
        __syncthreads();
        // Thread t owns digit t: the warps' counts become their first places, in warp order.
        uint32_t s = base[t];
#pragma unroll
        for (uint32_t w = 0; w < WARPS; ++w) {
            const uint32_t c = warp_hist[buf][w][t];
            warp_hist[buf][w][t] = s;
            s += c;
            warp_hist[buf ^ 1][w][t] = 0;
        }
        base[t] = s;
        __syncthreads();
        if (valid) out[warp_hist[buf][warp][d] + rank] = e;
    }
}

}  // namespace msm_radix
}  // namespace cuzk
