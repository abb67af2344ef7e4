//! Seeded generation of valid curve points on the device, so that benchmarks and large tests
//! need no bases shipped to the GPU host, and the shifted copies of bases that let an MSM share
//! one set of buckets among several windows. Exported: cuzk_curve_{g1,g2}_gen_points,
//! cuzk_curve_{g1,g2}_shift_copy.
#include "curve/xyzz.cuh"

namespace cuzk {
namespace bases {

// Most points one thread makes; they share one batched inversion, kept in local memory.
constexpr uint32_t MAX_PER_THREAD = 16;

// SplitMix64: a tiny, well-mixed generator that the host mirrors to recompute the multipliers.
__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Thread t writes out[t·per + j] = (j + 1)·k_t·g for j < per, with k_t a seeded 64-bit
// multiplier: one scalar multiplication per thread and one addition per point, then a single
// inversion for the whole run (Montgomery's trick) to bring the run to affine form.
template <class F>
__device__ void gen_points(affine_t<F>* out, uint64_t n, const affine_t<F>& g, uint64_t seed,
                           uint32_t per) {
    const uint64_t t = thread_index();
    const uint64_t first = t * per;
    if (per == 0 || per > MAX_PER_THREAD || first >= n) return;
    const uint32_t count = (uint32_t)min((uint64_t)per, n - first);

    uint64_t k = splitmix64(seed ^ (t * 0x9E3779B97F4A7C15ull));
    if (k == 0) k = 1;
    xyzz_t<F> s;
    set_inf(s);
#pragma unroll 1
    for (int bit = 63; bit >= 0; --bit) {
        dbl_xyzz(s);
        if ((k >> bit) & 1) add_mixed(s, g);
    }

    F xs[MAX_PER_THREAD], ys[MAX_PER_THREAD], zzs[MAX_PER_THREAD], zzzs[MAX_PER_THREAD];
    F prefix[MAX_PER_THREAD];
    xyzz_t<F> p = s;
#pragma unroll 1
    for (uint32_t j = 0; j < count; ++j) {
        if (j > 0) add_xyzz(p, s);
        xs[j] = p.x;
        ys[j] = p.y;
        zzs[j] = p.zz;
        zzzs[j] = p.zzz;
        prefix[j] = j == 0 ? p.zzz : mul(prefix[j - 1], p.zzz);
    }
    // (j+1)·k·g is never the identity: k < 2^64 and j < 16 keep the multiple below r.
    F inv_acc = inv(prefix[count - 1]);
#pragma unroll 1
    for (int j = (int)count - 1; j >= 0; --j) {
        const F w = j == 0 ? inv_acc : mul(inv_acc, prefix[j - 1]);  // 1 / ZZZ_j
        if (j > 0) inv_acc = mul(inv_acc, zzzs[j]);
        // 1 / ZZ = ZZ² / ZZZ² because ZZ³ = ZZZ².
        const F t2 = sqr(mul(zzs[j], w));
        affine_t<F> a;
        a.x = mul(xs[j], t2);
        a.y = mul(ys[j], w);
        store16(&out[first + j], a);
    }
}

// Copy k of a table of n points per copy: table[k·n + i] = 2^bits·table[(k − 1)·n + i] for
// i < n, thread t taking the `per` points from t·per with one batched inversion (Montgomery's
// trick) for them. The identity (all zeros) stays the identity and takes no part in the batch;
// no other point of prime order becomes it.
template <class F>
__device__ void shift_copy(affine_t<F>* table, uint64_t n, uint32_t k, uint32_t bits,
                           uint32_t per) {
    const uint64_t first = thread_index() * per;
    if (k == 0 || per == 0 || per > MAX_PER_THREAD || first >= n) return;
    const uint32_t count = (uint32_t)min((uint64_t)per, n - first);
    const affine_t<F>* src = table + (uint64_t)(k - 1) * n + first;
    affine_t<F>* dst = table + (uint64_t)k * n + first;

    F xs[MAX_PER_THREAD], ys[MAX_PER_THREAD], zzs[MAX_PER_THREAD], zzzs[MAX_PER_THREAD];
    F prefix[MAX_PER_THREAD];  // product of the ZZZ of points 0..=j that are not the identity
    F acc = one<F>();
#pragma unroll 1
    for (uint32_t j = 0; j < count; ++j) {
        const affine_t<F> a = load16(&src[j]);
        xyzz_t<F> p;
        if (is_identity(a)) {
            set_inf(p);
        } else {
            from_affine(p, a);
        }
#pragma unroll 1
        for (uint32_t b = 0; b < bits; ++b) dbl_xyzz(p);
        xs[j] = p.x;
        ys[j] = p.y;
        zzs[j] = p.zz;
        zzzs[j] = p.zzz;
        if (!is_inf(p)) acc = mul(acc, p.zzz);
        prefix[j] = acc;
    }
    F inv_acc = inv(acc);  // 1 / prefix[count − 1]
#pragma unroll 1
    for (int j = (int)count - 1; j >= 0; --j) {
        affine_t<F> a;
        if (is_zero(zzzs[j])) {
            a.x = zero<F>();
            a.y = zero<F>();
        } else {
            const F w = j == 0 ? inv_acc : mul(inv_acc, prefix[j - 1]);  // 1 / ZZZ_j
            inv_acc = mul(inv_acc, zzzs[j]);
            // 1 / ZZ = ZZ² / ZZZ² because ZZ³ = ZZZ².
            const F t2 = sqr(mul(zzs[j], w));
            a.x = mul(xs[j], t2);
            a.y = mul(ys[j], w);
        }
        store16(&dst[j], a);
    }
}

}  // namespace bases
}  // namespace cuzk

// out: n points. g: the group generator (affine, Montgomery form). seed: the run's seed.
// per: points per thread (1..16); launch at least ceil(n / per) threads.
extern "C" __global__ void cuzk_curve_g1_gen_points(cuzk::affine_t<fp_t>* out, uint64_t n,
                                                    cuzk::affine_t<fp_t> g, uint64_t seed,
                                                    uint32_t per) {
    cuzk::bases::gen_points(out, n, g, seed, per);
}

extern "C" __global__ void cuzk_curve_g2_gen_points(cuzk::affine_t<fp2_t>* out, uint64_t n,
                                                    cuzk::affine_t<fp2_t> g, uint64_t seed,
                                                    uint32_t per) {
    cuzk::bases::gen_points(out, n, g, seed, per);
}

// table: copies of n points each; fills copy k (1 ≤ k) from copy k − 1, 2^bits times each.
// per: points per thread (1..16); launch at least ceil(n / per) threads.
extern "C" __global__ void cuzk_curve_g1_shift_copy(cuzk::affine_t<fp_t>* table, uint64_t n,
                                                    uint32_t k, uint32_t bits, uint32_t per) {
    cuzk::bases::shift_copy(table, n, k, bits, per);
}

extern "C" __global__ void cuzk_curve_g2_shift_copy(cuzk::affine_t<fp2_t>* table, uint64_t n,
                                                    uint32_t k, uint32_t bits, uint32_t per) {
    cuzk::bases::shift_copy(table, n, k, bits, per);
}
