//! Short-Weierstrass point arithmetic (a = 0, so both BLS12-381 G1 over fp_t and G2 over fp2_t
//! or fp2_lane_t) in affine and extended Jacobian "XYZZ" coordinates, written once for every
//! coordinate field, and the lane-pair layout of G2 points in memory.
//!
//! XYZZ represents (x, y) = (X / ZZ, Y / ZZZ) with ZZ³ = ZZZ². It is the cheapest coordinate
//! system for Pippenger's buckets: adding an affine point costs 8M + 2S and no inversion, and
//! doubling never needs the curve constant. The point at infinity is ZZ = ZZZ = 0; storing it as
//! all-zero limbs lets a buffer of buckets be cleared with a memset. Affine points follow blst:
//! the identity is all zeros, and since G1 and G2 have prime order no other point has y = 0,
//! so `y = 0` identifies it.
#pragma once

#include "field/bls12_381.cuh"

namespace cuzk {

template <class F>
struct affine_t {
    F x, y;
};

template <class F>
struct xyzz_t {
    F x, y, zz, zzz;
};

// Whole-struct copies through 16-byte words: every point layout is a multiple of 16 bytes and
// buffers are at least 256-byte aligned, while the limb arrays only promise 4-byte alignment,
// which would otherwise split each point into 4-byte loads.
template <class T>
__device__ __forceinline__ T load16(const T* p) {
    static_assert(sizeof(T) % 16 == 0, "point layouts are multiples of 16 bytes");
    T out;
    const uint4* src = reinterpret_cast<const uint4*>(p);
    uint4* dst = reinterpret_cast<uint4*>(&out);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); ++i) dst[i] = src[i];
    return out;
}

template <class T>
__device__ __forceinline__ void store16(T* p, const T& v) {
    static_assert(sizeof(T) % 16 == 0, "point layouts are multiples of 16 bytes");
    uint4* dst = reinterpret_cast<uint4*>(p);
    const uint4* src = reinterpret_cast<const uint4*>(&v);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(T) / 16); ++i) dst[i] = src[i];
}

// Coordinate multiplication: Fp2 products use the lazily reduced Karatsuba form.
__device__ __forceinline__ fp_t pmul(fp_t a, fp_t b) { return mul(a, b); }
__device__ __forceinline__ fp2_t pmul(fp2_t a, fp2_t b) { return mul_lazy(a, b); }
__device__ __forceinline__ fp2_lane_t pmul(const fp2_lane_t& a, const fp2_lane_t& b) {
    return mul(a, b);
}

// a·b − c·d, the Y coordinate of the additions and doublings below: two products and a
// subtraction.
template <class F>
__device__ __forceinline__ F mul_sub(const F& a, const F& b, const F& c, const F& d) {
    return sub(pmul(a, b), pmul(c, d));
}
// G1's as a·b + c·(p − d) with one reduction (`fp_limbs::dot`): 36 wide multiply-adds a row
// instead of 48, and the G1 accumulation 5.5% faster at 2^27 on an H100 (docs/perf.md,
// thirty-first session). The nineteenth session measured it 2–4% slower when the level
// kernels ran 12 warps per SM and the extra registers cost 4 of them; the prefetching level
// kernel holds 255 registers (8 warps) with either form.
template <>
__device__ __forceinline__ fp_t mul_sub<fp_t>(const fp_t& a, const fp_t& b, const fp_t& c,
                                              const fp_t& d) {
    fp_t nd, r;
    fp_limbs::p_minus(nd.val, d.val);
    fp_limbs::dot(r.val, a.val, b.val, c.val, nd.val);
    return r;
}

// How the threads of a kernel hold coordinates of field F: `mem` is the coordinate's layout in
// memory and `count` the threads that share one point. A point of fp2_lane_t is held by a pair
// of adjacent lanes and stored as the fp2_t point it stands for.
template <class F>
struct lane_layout {
    using mem = F;
    static constexpr uint32_t count = 1;
};
template <>
struct lane_layout<fp2_lane_t> {
    using mem = fp2_t;
    static constexpr uint32_t count = 2;
};
template <class F>
using mem_t = typename lane_layout<F>::mem;

// Points in and out of memory in the layout of `mem_t<F>`.
template <class F>
__device__ __forceinline__ affine_t<F> load_affine(const affine_t<mem_t<F>>* p) {
    return load16(p);
}
template <class F>
__device__ __forceinline__ xyzz_t<F> load_xyzz(const xyzz_t<mem_t<F>>* p) {
    return load16(p);
}
template <class F>
__device__ __forceinline__ void store_xyzz(xyzz_t<mem_t<F>>* p, const xyzz_t<F>& v) {
    store16(p, v);
}

// A lane pair reads and writes its own halves: the coordinates of an fp2_t point are
// consecutive fp_t pairs (c0, c1), so lane parity picks the fp_t within each pair and the two
// lanes together touch one contiguous run of memory.
template <>
__device__ __forceinline__ affine_t<fp2_lane_t> load_affine<fp2_lane_t>(const affine_t<fp2_t>* p) {
    const fp_t* h = reinterpret_cast<const fp_t*>(p) + (lane_pair::odd() ? 1 : 0);
    affine_t<fp2_lane_t> r;
    r.x.h = load16(h);
    r.y.h = load16(h + 2);
    return r;
}
template <>
__device__ __forceinline__ xyzz_t<fp2_lane_t> load_xyzz<fp2_lane_t>(const xyzz_t<fp2_t>* p) {
    const fp_t* h = reinterpret_cast<const fp_t*>(p) + (lane_pair::odd() ? 1 : 0);
    xyzz_t<fp2_lane_t> r;
    r.x.h = load16(h);
    r.y.h = load16(h + 2);
    r.zz.h = load16(h + 4);
    r.zzz.h = load16(h + 6);
    return r;
}
template <>
__device__ __forceinline__ void store_xyzz<fp2_lane_t>(xyzz_t<fp2_t>* p,
                                                       const xyzz_t<fp2_lane_t>& v) {
    fp_t* h = reinterpret_cast<fp_t*>(p) + (lane_pair::odd() ? 1 : 0);
    store16(h, v.x.h);
    store16(h + 2, v.y.h);
    store16(h + 4, v.zz.h);
    store16(h + 6, v.zzz.h);
}

// One coordinate, or an affine point, in and out of memory in the layout of `mem_t<F>` (the
// batch-affine pair levels store coordinates apart); lane pairs again touch their own halves.
template <class F>
__device__ __forceinline__ F load_coord(const mem_t<F>* p) {
    return load16(p);
}
template <class F>
__device__ __forceinline__ void store_coord(mem_t<F>* p, const F& v) {
    store16(p, v);
}
template <class F>
__device__ __forceinline__ void store_affine(affine_t<mem_t<F>>* p, const affine_t<F>& v) {
    store16(p, v);
}
template <>
__device__ __forceinline__ fp2_lane_t load_coord<fp2_lane_t>(const fp2_t* p) {
    return fp2_lane_t{load16(reinterpret_cast<const fp_t*>(p) + (lane_pair::odd() ? 1 : 0))};
}
template <>
__device__ __forceinline__ void store_coord<fp2_lane_t>(fp2_t* p, const fp2_lane_t& v) {
    store16(reinterpret_cast<fp_t*>(p) + (lane_pair::odd() ? 1 : 0), v.h);
}
template <>
__device__ __forceinline__ void store_affine<fp2_lane_t>(affine_t<fp2_t>* p,
                                                         const affine_t<fp2_lane_t>& v) {
    store_coord<fp2_lane_t>(&p->x, v.x);
    store_coord<fp2_lane_t>(&p->y, v.y);
}

template <class F>
__device__ __forceinline__ bool is_identity(const affine_t<F>& p) {
    return is_zero(p.y);
}

template <class F>
__device__ __forceinline__ bool is_inf(const xyzz_t<F>& p) {
    return is_zero(p.zz);
}

template <class F>
__device__ __forceinline__ void set_inf(xyzz_t<F>& p) {
    p.x = zero<F>();
    p.y = zero<F>();
    p.zz = zero<F>();
    p.zzz = zero<F>();
}

template <class F>
__device__ __forceinline__ void from_affine(xyzz_t<F>& out, const affine_t<F>& p) {
    out.x = p.x;
    out.y = p.y;
    out.zz = one<F>();
    out.zzz = one<F>();
}

// 2·(x, y) for an affine point other than the identity (EFD mdbl-2008-s-1): 4M + 3S, the rare
// branch of a mixed addition of a point to itself.
template <class F>
__device__ void dbl_affine(xyzz_t<F>& out, const affine_t<F>& p) {
    const F u = dbl(p.y);
    const F v = sqr(u);
    const F w = pmul(u, v);
    const F s = pmul(p.x, v);
    const F x2 = sqr(p.x);
    const F m = add(dbl(x2), x2);
    const F x3 = sub(sub(sqr(m), s), s);
    out.y = mul_sub(m, sub(s, x3), w, p.y);
    out.x = x3;
    out.zz = v;
    out.zzz = w;
}

// a ← 2a (EFD dbl-2008-s-1 with a = 0). Infinity stays infinity since ZZ and ZZZ scale.
template <class F>
__device__ void dbl_xyzz(xyzz_t<F>& a) {
    if (is_inf(a)) return;
    const F u = dbl(a.y);
    const F v = sqr(u);
    const F w = pmul(u, v);
    const F s = pmul(a.x, v);
    const F x2 = sqr(a.x);
    const F m = add(dbl(x2), x2);
    const F x3 = sub(sub(sqr(m), s), s);
    a.y = mul_sub(m, sub(s, x3), w, a.y);
    a.x = x3;
    a.zz = pmul(a.zz, v);
    a.zzz = pmul(a.zzz, w);
}

// a ← a + p for an affine p that is not the identity (EFD madd-2008-s): 8M + 2S. Handles a at
// infinity, p = a (doubling) and p = −a (infinity), all of which Pippenger meets with
// repeated bases or scalars.
template <class F>
__device__ void add_mixed(xyzz_t<F>& a, const affine_t<F>& p) {
    if (is_inf(a)) {
        from_affine(a, p);
        return;
    }
    const F u2 = pmul(p.x, a.zz);
    const F s2 = pmul(p.y, a.zzz);
    const F pd = sub(u2, a.x);
    const F r = sub(s2, a.y);
    if (is_zero(pd)) {
        if (is_zero(r)) {
            dbl_affine(a, p);
        } else {
            set_inf(a);
        }
        return;
    }
    const F pp = sqr(pd);
    const F ppp = pmul(pd, pp);
    const F q = pmul(a.x, pp);
    const F x3 = sub(sub(sqr(r), ppp), dbl(q));
    a.y = mul_sub(r, sub(q, x3), a.y, ppp);
    a.x = x3;
    a.zz = pmul(a.zz, pp);
    a.zzz = pmul(a.zzz, ppp);
}

// a ← a + p for lane pairs and an affine p that is not the identity. The products exchange
// halves through warp shuffles, which run slowest when the warp has split, so the common cases
// share one path: an accumulator at infinity (each new bucket run) goes through the general
// formulas with everyone else, and the function returns true, leaving garbage in a for the
// caller to replace with p. The caller can re-read p from memory for that, which is cheaper
// than holding it in registers through the formulas (at 168 registers, those 24 spilled).
// Only p = ±a, which random inputs never meet, branches. The products are ordered so that each
// operand dies as early as it can.
__device__ __forceinline__ bool add_mixed_or_start(xyzz_t<fp2_lane_t>& a,
                                                   const affine_t<fp2_lane_t>& p) {
    using F = fp2_lane_t;
    const bool inf = is_inf(a);
    const F pd = sub(pmul(p.x, a.zz), a.x);
    const F r = sub(pmul(p.y, a.zzz), a.y);
    if (!inf && is_zero(pd)) {
        if (is_zero(r)) {
            dbl_affine(a, p);
        } else {
            set_inf(a);
        }
        return false;
    }
    const F pp = sqr(pd);
    const F ppp = pmul(pd, pp);
    a.zz = pmul(a.zz, pp);
    const F q = pmul(a.x, pp);
    a.zzz = pmul(a.zzz, ppp);
    const F t = pmul(a.y, ppp);
    a.x = sub(sub(sqr(r), ppp), dbl(q));
    a.y = sub(pmul(r, sub(q, a.x)), t);
    return inf;
}

__device__ __forceinline__ void add_mixed(xyzz_t<fp2_lane_t>& a, const affine_t<fp2_lane_t>& p) {
    if (add_mixed_or_start(a, p)) from_affine(a, p);
}

// a ← a + b (EFD add-2008-s): 12M + 2S, with every special case handled. The body is inlined
// wherever `add_xyzz_inline` is called; `add_xyzz` leaves the choice to the compiler.
template <class F>
__device__ __forceinline__ void add_xyzz_inline(xyzz_t<F>& a, const xyzz_t<F>& b) {
    if (is_inf(b)) return;
    if (is_inf(a)) {
        a = b;
        return;
    }
    const F u1 = pmul(a.x, b.zz);
    const F u2 = pmul(b.x, a.zz);
    const F s1 = pmul(a.y, b.zzz);
    const F s2 = pmul(b.y, a.zzz);
    const F pd = sub(u2, u1);
    const F r = sub(s2, s1);
    if (is_zero(pd)) {
        if (is_zero(r)) {
            dbl_xyzz(a);
        } else {
            set_inf(a);
        }
        return;
    }
    const F pp = sqr(pd);
    const F ppp = pmul(pd, pp);
    const F q = pmul(u1, pp);
    const F x3 = sub(sub(sqr(r), ppp), dbl(q));
    a.y = mul_sub(r, sub(q, x3), s1, ppp);
    a.x = x3;
    a.zz = pmul(pmul(a.zz, b.zz), pp);
    a.zzz = pmul(pmul(a.zzz, b.zzz), ppp);
}

template <class F>
__device__ void add_xyzz(xyzz_t<F>& a, const xyzz_t<F>& b) {
    add_xyzz_inline(a, b);
}

// Lane pairs always inline it: as a call it takes its operands by reference, which pins the
// caller's accumulator to local memory for the whole loop around it (a store and a load per
// addition in the bucket accumulation), not only across the rare call.
__device__ __forceinline__ void add_xyzz(xyzz_t<fp2_lane_t>& a, const xyzz_t<fp2_lane_t>& b) {
    add_xyzz_inline(a, b);
}

template <class F>
__device__ __forceinline__ affine_t<F> neg_affine(const affine_t<F>& p) {
    affine_t<F> out;
    out.x = p.x;
    out.y = neg(p.y);
    return out;
}

// k·a for a small public multiplier, most significant bit first.
template <class F>
__device__ void mul_small(xyzz_t<F>& out, const xyzz_t<F>& a, uint32_t k) {
    set_inf(out);
    if (k == 0 || is_inf(a)) return;
    const int top = 31 - __clz(k);
    out = a;
#pragma unroll 1
    for (int bit = top - 1; bit >= 0; --bit) {
        dbl_xyzz(out);
        if ((k >> bit) & 1) add_xyzz(out, a);
    }
}

}  // namespace cuzk
