//! The curve half of the MSM, for G1 (fp_t, a thread per point) and G2 (fp2_lane_t, a pair of
//! lanes per point): the exported kernels of the bucket accumulation (msm/level.cuh), the
//! addition of a later chunk's buckets and the per-window bucket sums (msm/bucket_sums.cuh),
//! and the batch-affine pair levels (msm/pairs.cuh).
//! Exported: cuzk_msm_{g1,g2}_{level_affine,level_xyzz,add_buckets,bucket_sums,
//! pair_level_sorted,pair_level_keyed,level_points}.
#include "msm/bucket_sums.cuh"
#include "msm/level.cuh"
#include "msm/pairs.cuh"

using cuzk::affine_t;
using cuzk::mem_t;
using cuzk::xyzz_t;
using cuzk::msm::LevelParams;
using cuzk::msm::PairParams;

// level_affine: entries (keys[i·stride] or i / key_div, vals[i·stride]) with vals = base index |
// sign bit (stride 2 reads interleaved (key, value) pairs). level_xyzz: entries
// (keys[i·stride] or i / key_div, pts[i]). Both: m entries (p.m_value or *m_in),
// buckets[key] += complete runs (= with FLAG_STORE), out_keys/out_pts get 2·ceil(m / span) slots, *m_out that count.
// Launch at least ceil(m_max / span) work items. add_buckets: buckets[i] += more[i] for
// i < n, n work items. bucket_sums: w_count · (nb >> seg_log) work items, out gets one point
// per item. A work item is lane_layout<F>::count threads (G1 one, G2
// two), and the host launches that many threads per item.
#define CUZK_MSM_CURVE_KERNELS(NAME, F, BOUNDS, LEVEL)                                         \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_level_affine(        \
        const uint32_t* keys, const uint32_t* vals, const affine_t<mem_t<F>>* bases,           \
        const uint32_t* m_in, LevelParams p, xyzz_t<mem_t<F>>* buckets, uint32_t* out_keys,    \
        xyzz_t<mem_t<F>>* out_pts, uint32_t* m_out) {                                          \
        cuzk::msm::AffineSource<F> src{vals, p.stride, bases};                                 \
        cuzk::msm::LEVEL<F>(keys, src, m_in, p, buckets, out_keys, out_pts, m_out);            \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_level_xyzz(          \
        const uint32_t* keys, const xyzz_t<mem_t<F>>* pts, const uint32_t* m_in,               \
        LevelParams p, xyzz_t<mem_t<F>>* buckets, uint32_t* out_keys,                          \
        xyzz_t<mem_t<F>>* out_pts, uint32_t* m_out) {                                          \
        cuzk::msm::XyzzSource<F> src{pts};                                                     \
        cuzk::msm::LEVEL<F>(keys, src, m_in, p, buckets, out_keys, out_pts, m_out);            \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_add_buckets(         \
        xyzz_t<mem_t<F>>* buckets, const xyzz_t<mem_t<F>>* more, uint32_t n) {                 \
        cuzk::msm::add_buckets<F>(buckets, more, n);                                           \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_bucket_sums(         \
        const xyzz_t<mem_t<F>>* buckets, uint32_t w_count, uint32_t nb, uint32_t seg_log,      \
        xyzz_t<mem_t<F>>* out) {                                                               \
        cuzk::msm::bucket_sums<F>(buckets, w_count, nb, seg_log, out);                         \
    }

// LEVEL: `level` or `level_inline`. BOUNDS, in parentheses: threads per block (CURVE_BLOCK in
// crates/cuzk-msm/src/gpu/launch.rs), and blocks per SM where registers are to be capped.
// G1 runs uncapped, 2 blocks (8 warps) per SM: the level kernels hold 194 registers
// (`level_xyzz`) and 255 (`level_affine`, which keeps the next entry's base loaded). With
// the generated product it held 164 (12 warps); capped at 128 registers (16 warps) its level
// kernels spilled and measured 8-10% slower (nineteenth session), and the CIOS product capped
// at 168 (12 warps, no spills) measured 1-2% slower than uncapped (docs/perf.md,
// twenty-first session).
CUZK_MSM_CURVE_KERNELS(g1, fp_t, (128), level)
// G2 runs on lane pairs: a thread holds half of each Fp2 coordinate, so a point takes the
// registers of a G1 point, and each Fp2 product costs the pair four Fp products and two
// reductions. Registers are not capped: on the H200 the unbounded build (about 250 registers,
// 8 warps per SM, no spills in the addition) beat caps of 168 (12 warps) and 128 (16 warps)
// whose spills cost more than the extra warps won (docs/perf.md).
CUZK_MSM_CURVE_KERNELS(g2, cuzk::fp2_lane_t, (128), level_inline)

#undef CUZK_MSM_CURVE_KERNELS

// The batch-affine pair levels (msm/pairs.cuh). pair_level_sorted: the window's entries are
// the sort's (key, value) pairs, bucket b's cnt[b] of them ending at cursor[b];
// pair_level_keyed: pts[i], bucket b's from start[b]. Both: slot s's bucket is keys[s] −
// p.key_base < p.nb (cuzk_msm_slot_keys wrote them), bucket b's outputs go to out_start[b]
// onwards (ceil(cnt[b] / 2) of them). A work item per slot (F: fp_t, a thread; fp2_lane_t, a
// lane pair), grid-stride over the slots; each item's pairs share one inversion, so the grid
// is sized for long batches. level_points: as level_xyzz, over keyed affine points
// (identities skipped), in the same layout. Points in memory are affine_t<mem_t<F>>.
#define CUZK_MSM_PAIR_KERNELS(NAME, F, LEVEL, BOUNDS)                                          \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_pair_level_sorted(   \
        const uint32_t* pairs, const affine_t<cuzk::mem_t<F>>* bases, const uint32_t* cnt,     \
        const uint32_t* cursor, PairParams p, const uint32_t* out_start, const uint32_t* keys, \
        affine_t<cuzk::mem_t<F>>* out_pts) {                                                   \
        cuzk::msm::SortedEntries<F> in{pairs, bases};                                          \
        cuzk::msm::pair_level<F>(in, cnt, cursor, p, out_start, keys, out_pts);                \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__ BOUNDS cuzk_msm_##NAME##_pair_level_keyed(    \
        const affine_t<cuzk::mem_t<F>>* pts, const uint32_t* cnt, const uint32_t* start,       \
        PairParams p, const uint32_t* out_start, const uint32_t* keys,                         \
        affine_t<cuzk::mem_t<F>>* out_pts) {                                                   \
        cuzk::msm::KeyedEntries<F> in{pts};                                                    \
        cuzk::msm::pair_level<F>(in, cnt, start, p, out_start, keys, out_pts);                 \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) cuzk_msm_##NAME##_level_points(          \
        const uint32_t* keys, const affine_t<cuzk::mem_t<F>>* pts, const uint32_t* m_in,       \
        LevelParams p, xyzz_t<cuzk::mem_t<F>>* buckets, uint32_t* out_keys,                    \
        xyzz_t<cuzk::mem_t<F>>* out_pts, uint32_t* m_out) {                                    \
        cuzk::msm::PointSource<F> src{pts};                                                    \
        cuzk::msm::LEVEL<F>(keys, src, m_in, p, buckets, out_keys, out_pts, m_out);            \
    }

// BOUNDS of the pair kernels: G1 takes 146–148 registers uncapped (3 blocks of 128 per SM);
// an image built with CUZK_G1_PAIR_MIN_BLOCKS=k caps them for k blocks (a variant to measure:
// 4 blocks means 128 registers). G2 runs on lane pairs, a point in about the registers of a
// G1 point, uncapped.
#ifdef CUZK_G1_PAIR_MIN_BLOCKS
CUZK_MSM_PAIR_KERNELS(g1, fp_t, level, (128, CUZK_G1_PAIR_MIN_BLOCKS))
#else
CUZK_MSM_PAIR_KERNELS(g1, fp_t, level, (128))
#endif
CUZK_MSM_PAIR_KERNELS(g2, cuzk::fp2_lane_t, level_inline, (128))

#undef CUZK_MSM_PAIR_KERNELS
