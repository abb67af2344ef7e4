//! Helpers of the MSM's curve-independent half (msm/sort.cu): the digit parameters, signed
//! window digits of canonical scalars, and warp- and block-wide scans.
#pragma once

#include "field/bls12_381.cuh"

namespace cuzk {
namespace msm_sort {

// Mirrors `DigitParams` in crates/cuzk-msm/src/gpu/launch.rs.
// A pass's digit windows [w_begin, w_begin + w_count) map onto its bucket sets: with a table of
// `copies` shifted copies of the bases (copy k holds 2^(c·k)·P_i at index k·copy_stride + i),
// digit window w_begin + j adds into set j / copies and reads its base from copy j % copies
// (w_begin is a multiple of copies). Without a table copies = 1: a set per window.
struct DigitParams {
    uint32_t n;            // scalars in this chunk
    uint32_t base_offset;  // index in the bases of the chunk's first scalar
    uint32_t c;            // window bits; buckets per set are 2^(c-1)
    uint32_t w_begin;      // first digit window of this pass
    uint32_t w_count;      // digit windows in this pass
    uint32_t flags;        // FLAG_INDEXED: entry j is point tail_idx[j], else base_offset + j
    uint32_t copies;       // shifted copies of the bases (1: none)
    uint32_t copy_stride;  // points between copies
};
constexpr uint32_t FLAG_INDEXED = 1;

constexpr uint32_t SIGN_BIT = 0x80000000u;
constexpr uint32_t SCAN_BLOCK = 256;
constexpr uint32_t SCAN_ITEMS = 16;
constexpr uint32_t SCAN_TILE = SCAN_BLOCK * SCAN_ITEMS;

__device__ __forceinline__ bool is_zero_limbs(const fr_t& s) {
    uint32_t acc = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc |= s.val[i];
    return acc == 0;
}

__device__ __forceinline__ bool is_one_limbs(const fr_t& s) {
    uint32_t acc = s.val[0] ^ 1u;
#pragma unroll
    for (int i = 1; i < 8; ++i) acc |= s.val[i];
    return acc == 0;
}

// Bits [pos, pos + c) of a 256-bit little-endian number, c ≤ 31.
__device__ __forceinline__ uint32_t window_bits(const fr_t& s, uint32_t pos, uint32_t c) {
    const uint32_t limb = pos >> 5, shift = pos & 31;
    const uint64_t lo = limb < 8 ? s.val[limb] : 0;
    const uint64_t hi = limb + 1 < 8 ? s.val[limb + 1] : 0;
    return (uint32_t)(((lo | (hi << 32)) >> shift) & ((1ull << c) - 1));
}

// The signed digit of window w given the carry out of window w − 1 (updated): its magnitude,
// with `negative` set when the digit is −magnitude. Digits lie in (−2^(c−1), 2^(c−1)]; a window
// above that takes 2^c off and carries one upward, so that s = Σ d_w·2^(c·w).
__device__ __forceinline__ uint32_t next_digit(const fr_t& s, uint32_t w, uint32_t c,
                                               uint32_t& carry, bool& negative) {
    const uint32_t d = window_bits(s, w * c, c) + carry;
    negative = d > (1u << (c - 1));
    carry = negative ? 1 : 0;
    return negative ? (1u << c) - d : d;
}

// Calls f(set, |d|, negative, copy) for every non-zero digit d of the digit windows
// [w_begin, w_begin + w_count) of s, with the window's bucket set (counted from the pass's
// first) and copy of the bases. Digits below w_begin are still computed for their carry.
template <class Fn>
__device__ __forceinline__ void for_each_digit(const fr_t& s, const DigitParams& p, Fn f) {
    const uint32_t w_end = p.w_begin + p.w_count;
    uint32_t carry = 0, set = 0, copy = 0;
#pragma unroll 1
    for (uint32_t w = 0; w < w_end; ++w) {
        bool negative;
        const uint32_t d = next_digit(s, w, p.c, carry, negative);
        if (w < p.w_begin) continue;
        if (d != 0) f(set, d, negative, copy);
        if (++copy == p.copies) {
            copy = 0;
            ++set;
        }
    }
}

// The sorted entry's value for base `point` of copy 0 read from copy `copy`, signed.
__device__ __forceinline__ uint32_t entry_value(const DigitParams& p, uint32_t point,
                                                uint32_t copy, bool negative) {
    return (point + copy * p.copy_stride) | (negative ? SIGN_BIT : 0u);
}

// Exclusive scan of one value per thread across the block (blockDim.x a multiple of 32).
__device__ uint32_t block_exclusive_scan(uint32_t v, uint32_t& total) {
    __shared__ uint32_t warp_sums[32];
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t warps = blockDim.x >> 5;
    uint32_t x = v;
#pragma unroll
    for (uint32_t o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) warp_sums[warp] = x;
    __syncthreads();
    if (warp == 0) {
        uint32_t w = lane < warps ? warp_sums[lane] : 0;
#pragma unroll
        for (uint32_t o = 1; o < 32; o <<= 1) {
            const uint32_t y = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += y;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    total = warp_sums[warps - 1];
    return (warp > 0 ? warp_sums[warp - 1] : 0) + x - v;
}

}  // namespace msm_sort
}  // namespace cuzk
