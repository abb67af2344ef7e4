//! The MSM's work on whole bucket arrays: a later chunk's buckets added into its pass's, and
//! the per-window bucket sums Σ (j + 1)·B_j over segments of a window's buckets, from one
//! running sum from the top bucket down. Instantiated by msm/msm.cu.
#pragma once

#include "msm/level.cuh"

namespace cuzk {
namespace msm {

// Work item t < n: buckets[t] += more[t], one general addition an item, diverging only where
// one side is at infinity (or, rarely, both sides are equal or opposite). A chunk's complete
// runs were stored into `more` (zeroed first), so most of its buckets hold a sum where the
// pass's buckets hold one too.
template <class F>
__device__ __forceinline__ void add_buckets(xyzz_t<mem_t<F>>* buckets,
                                            const xyzz_t<mem_t<F>>* more, uint32_t n) {
    const uint64_t t = item_index<F>();
    if (t >= n) return;
    const xyzz_t<F> b = load_xyzz<F>(&more[t]);
    if (is_inf(b)) return;
    xyzz_t<F> a = load_xyzz<F>(&buckets[t]);
    add_xyzz_inline(a, b);
    store_xyzz<F>(&buckets[t], a);
}

// Thread (w, k) of the grid sums segment k, of 2^seg_log buckets, of window w: with bucket
// j of the window standing for digit j + 1, it returns Σ (j + 1)·B_j over the segment as
// T + k·2^seg_log·R, where R = Σ B_j and T = Σ (j − start + 1)·B_j come from one running sum
// from the top bucket down. The per-segment results are summed per window by `level`.
template <class F>
__device__ void bucket_sums(const xyzz_t<mem_t<F>>* buckets, uint32_t w_count, uint32_t nb,
                            uint32_t seg_log, xyzz_t<mem_t<F>>* out) {
    const uint32_t segs = nb >> seg_log;
    const uint64_t t = item_index<F>();
    if (t >= (uint64_t)w_count * segs) return;
    const uint32_t w = (uint32_t)(t / segs), k = (uint32_t)(t % segs);
    const uint32_t len = 1u << seg_log;
    const xyzz_t<mem_t<F>>* b = buckets + (uint64_t)w * nb + (uint64_t)k * len;
    xyzz_t<F> run, tot;
    set_inf(run);
    set_inf(tot);
#pragma unroll 1
    for (int j = (int)len - 1; j >= 0; --j) {
        add_xyzz(run, load_xyzz<F>(&b[j]));
        add_xyzz(tot, run);
    }
    xyzz_t<F> offset;
    mul_small(offset, run, k * len);
    add_xyzz(tot, offset);
    store_xyzz<F>(&out[t], tot);
}

}  // namespace msm
}  // namespace cuzk
