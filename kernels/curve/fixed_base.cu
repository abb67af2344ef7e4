//! Fixed-base scalar multiplication: many scalars times one base point, from a table of the
//! base's signed-window multiples, results in affine form. Exported: cuzk_curve_{g1,g2}_fixed_base.
//!
//! The table (built on the host, a few MiB, so it stays in L2) holds d·2^{c·w}·G for
//! d = 1..2^{c-1} and every window w. A scalar recoded into signed base-2^c digits then costs
//! one mixed XYZZ addition per non-zero digit and no doubling. Each thread multiplies up to
//! MAX_PER_THREAD scalars, keeps their XYZZ results, and brings them to affine form with one
//! field inversion (Montgomery's trick).
#include "curve/xyzz.cuh"

namespace cuzk {
namespace fixed_base {

// Most points one thread makes; they share one inversion, their coordinates kept in local memory.
constexpr uint32_t MAX_PER_THREAD = 16;
// Widest window: the digit extraction reads two 32-bit words, so c + 31 must stay below 64.
constexpr uint32_t MAX_BITS = 16;

// Bits [lo, lo + c) of a 256-bit little-endian number in eight 32-bit words, zero past bit 255.
__device__ __forceinline__ uint32_t window_bits(const uint32_t s[8], uint32_t lo, uint32_t c) {
    const uint32_t word = lo >> 5;
    const uint32_t shift = lo & 31;
    if (word >= 8) return 0;
    uint64_t v = s[word];
    if (word + 1 < 8) v |= (uint64_t)s[word + 1] << 32;
    return (uint32_t)(v >> shift) & ((1u << c) - 1);
}

// out[i] = scalars[i]·G for begin ≤ i < end, where table[w·2^{c-1} + d − 1] = d·2^{c·w}·G.
// Thread t takes i = begin + t + j·T (T threads in the grid, j < per), so that neighbouring
// threads read neighbouring scalars and write neighbouring points.
template <class F>
__device__ void fixed_base_mul(affine_t<F>* out, const fr_t* scalars, uint64_t begin,
                               uint64_t end, const affine_t<F>* table, uint32_t c,
                               uint32_t windows, uint32_t per) {
    if (per == 0 || per > MAX_PER_THREAD || c < 2 || c > MAX_BITS) return;
    const uint64_t first = begin + thread_index();
    const uint64_t stride = thread_count();
    const uint32_t half = 1u << (c - 1);

    F xs[MAX_PER_THREAD], ys[MAX_PER_THREAD], zzs[MAX_PER_THREAD], zzzs[MAX_PER_THREAD];
    F prefix[MAX_PER_THREAD];
    uint32_t count = 0;
#pragma unroll 1
    for (uint32_t j = 0; j < per; ++j) {
        const uint64_t i = first + (uint64_t)j * stride;
        if (i >= end) break;
        // Digits come from the canonical value; the scalars arrive in Montgomery form.
        const fr_t s = from_mont(load16(&scalars[i]));
        xyzz_t<F> acc;
        set_inf(acc);
        uint32_t carry = 0;
#pragma unroll 1
        for (uint32_t w = 0; w < windows; ++w) {
            const uint32_t raw = window_bits(s.val, w * c, c) + carry;
            // Digits lie in (−2^{c−1}, 2^{c−1}]: a larger window value borrows from the next.
            carry = raw > half ? 1 : 0;
            const uint32_t mag = carry ? (1u << c) - raw : raw;
            if (mag == 0) continue;
            affine_t<F> p = load16(&table[(uint64_t)w * half + mag - 1]);
            if (carry) p.y = neg(p.y);
            // Complete for every case the sums meet: acc at infinity, acc = ±p.
            add_mixed(acc, p);
        }
        xs[j] = acc.x;
        ys[j] = acc.y;
        zzs[j] = acc.zz;
        zzzs[j] = acc.zzz;
        // A zero scalar leaves acc at infinity (ZZZ = 0): it joins the product as one.
        const F z = is_zero(acc.zzz) ? one<F>() : acc.zzz;
        prefix[j] = j == 0 ? z : mul(prefix[j - 1], z);
        count = j + 1;
    }
    if (count == 0) return;

    F inv_acc = inv(prefix[count - 1]);
#pragma unroll 1
    for (int j = (int)count - 1; j >= 0; --j) {
        const bool at_inf = is_zero(zzzs[j]);
        const F z = at_inf ? one<F>() : zzzs[j];
        const F w = j == 0 ? inv_acc : mul(inv_acc, prefix[j - 1]);  // 1 / ZZZ_j
        if (j > 0) inv_acc = mul(inv_acc, z);
        affine_t<F> a;
        if (at_inf) {
            // blst's affine identity: all zeros.
            a.x = zero<F>();
            a.y = zero<F>();
        } else {
            // 1 / ZZ = ZZ² / ZZZ² because ZZ³ = ZZZ².
            const F t2 = sqr(mul(zzs[j], w));
            a.x = mul(xs[j], t2);
            a.y = mul(ys[j], w);
        }
        store16(&out[first + (uint64_t)j * stride], a);
    }
}

}  // namespace fixed_base
}  // namespace cuzk

// out, scalars: the same n elements (the caller's views); reads scalars[i] (Montgomery form)
// and writes out[i] = scalars[i]·G for begin ≤ i < end ≤ n. table: windows·2^{c−1} affine points,
// entry w·2^{c−1} + d − 1 = d·2^{c·w}·G, none the identity; c in 2..=16 with c·windows ≥ 256.
// per: points per thread (1..16); launch at least ceil((end − begin) / per) threads.
extern "C" __global__ void cuzk_curve_g1_fixed_base(cuzk::affine_t<fp_t>* out, const fr_t* scalars,
                                                    uint64_t begin, uint64_t end,
                                                    const cuzk::affine_t<fp_t>* table, uint32_t c,
                                                    uint32_t windows, uint32_t per) {
    cuzk::fixed_base::fixed_base_mul(out, scalars, begin, end, table, c, windows, per);
}

extern "C" __global__ void cuzk_curve_g2_fixed_base(cuzk::affine_t<fp2_t>* out,
                                                    const fr_t* scalars, uint64_t begin,
                                                    uint64_t end,
                                                    const cuzk::affine_t<fp2_t>* table,
                                                    uint32_t c, uint32_t windows, uint32_t per) {
    cuzk::fixed_base::fixed_base_mul(out, scalars, begin, end, table, c, windows, per);
}
