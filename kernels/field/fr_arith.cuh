//! Fr arithmetic specialised to r for the NTT's inner loops and the PCE evaluation: Montgomery
//! multiplication, addition and subtraction on `fr_t` (eight little-endian 32-bit limbs,
//! Montgomery form, R = 2^256), in namespace `cuzk::fr`.
//!
//! The generic field code (`mul(fr_t, fr_t)` from field/bls12_381.cuh) works for any modulus.
//! The NTT spends nearly all its time in Fr multiplications, so this file exploits the shape of
//! r itself: r ≡ 1 (mod 2^32) and r's second 32-bit limb is 2^32 − 1. Then each of the eight
//! reduction rounds needs no multiplication to find its quotient digit (m = −t0) and none for
//! the two lowest limbs of m·r, which turn into additions: 112 instead of 136 32-bit products
//! per multiplication. `mont_mul` runs fr_mont.cuh's form (two accumulators that swap roles
//! between rounds); `mont_mul_folded` is the earlier form (folded every round), which the CPU
//! model in crates/cuzk-ntt/src/plan/model.rs follows, carry flag and all, against blstrs. The
//! GPU tests check `mont_mul` against blstrs and against the generic code.
#pragma once

#include "field/bls12_381.cuh"
#include "field/fr_f64.cuh"
#include "field/fr_mont.cuh"

namespace cuzk {
namespace fr {

// r in 32-bit limbs, little-endian. The first two are what the reduction shortcut relies on.
#define CUZK_FR_P0 0x00000001
#define CUZK_FR_P1 0xffffffff
#define CUZK_FR_P2 0xfffe5bfe
#define CUZK_FR_P3 0x53bda402
#define CUZK_FR_P4 0x09a1d805
#define CUZK_FR_P5 0x3339d808
#define CUZK_FR_P6 0x299d7d48
#define CUZK_FR_P7 0x73eda753

// 2r in 32-bit limbs, little-endian: the bound of the NTT's lazily reduced values (2r < 2^256).
#define CUZK_FR_Q0 0x00000002
#define CUZK_FR_Q1 0xfffffffe
#define CUZK_FR_Q2 0xfffcb7fd
#define CUZK_FR_Q3 0xa77b4805
#define CUZK_FR_Q4 0x1343b00a
#define CUZK_FR_Q5 0x6673b010
#define CUZK_FR_Q6 0x533afa90
#define CUZK_FR_Q7 0xe7db4ea6

#define CUZK_FR_STR2(x) #x
#define CUZK_FR_STR(x) CUZK_FR_STR2(x)

// Keep `r - 2^32·t` below r: returns t if t < r, else t - r (t < 2r).
__device__ __forceinline__ fr_t reduce_once(const uint32_t t[8]) {
    uint32_t d[8], keep;
    asm("sub.cc.u32  %0, %9, " CUZK_FR_STR(CUZK_FR_P0) ";\n\t"
        "subc.cc.u32 %1, %10, " CUZK_FR_STR(CUZK_FR_P1) ";\n\t"
        "subc.cc.u32 %2, %11, " CUZK_FR_STR(CUZK_FR_P2) ";\n\t"
        "subc.cc.u32 %3, %12, " CUZK_FR_STR(CUZK_FR_P3) ";\n\t"
        "subc.cc.u32 %4, %13, " CUZK_FR_STR(CUZK_FR_P4) ";\n\t"
        "subc.cc.u32 %5, %14, " CUZK_FR_STR(CUZK_FR_P5) ";\n\t"
        "subc.cc.u32 %6, %15, " CUZK_FR_STR(CUZK_FR_P6) ";\n\t"
        "subc.cc.u32 %7, %16, " CUZK_FR_STR(CUZK_FR_P7) ";\n\t"
        "subc.u32    %8, 0, 0;"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]),
          "=r"(d[7]), "=r"(keep)
        : "r"(t[0]), "r"(t[1]), "r"(t[2]), "r"(t[3]), "r"(t[4]), "r"(t[5]), "r"(t[6]), "r"(t[7]));
    // keep is all ones when the subtraction borrowed (t < r): select without branching.
    fr_t out;
#pragma unroll
    for (int i = 0; i < 8; ++i) out.val[i] = (t[i] & keep) | (d[i] & ~keep);
    return out;
}

// a·b·2^-256 mod r for a, b < r: CIOS, operand scanning, with the even and odd limbs of a in
// separate carry chains so that no chain has to carry into a limb another chain writes, the two
// folded together every round. Superseded by `mont_mul`; kept as the measured baseline
// (cuzk_ntt_arith, which = 6).
//
// Every product stays in multiply-add carry chains (mad.lo.cc / madc.hi.cc), which ptxas
// partly fuses into IMAD.WIDE.X. Measured on the H200 (cuzk-bench ntt, 2026-11-29): this form
// runs 52 G products/s; moving the reduction's products to 64-bit multiplies summed on the ALU
// (fewer multiply-pipe instructions, more ALU ones) ran 44.5 G/s: a 64-bit IMAD.WIDE costs the
// multiply pipe about as much as two 32-bit ones, so only fewer 32x32 products help.
__device__ __forceinline__ fr_t mont_mul_folded(const fr_t& a, const fr_t& b) {
    const uint32_t* x = a.val;
    uint32_t e0, e1, e2, e3, e4, e5, e6, e7, e8;
    uint32_t o0, o1, o2, o3, o4, o5, o6, o7;

    // One round: t = (t + x·b_i + m·r) / 2^32, with t held as E (limbs 0..8) plus O shifted up
    // one limb; on entry E holds t and limb 8 of E is zero.
#define CUZK_ROUND(FIRST, BI)                                                                  \
    {                                                                                          \
        const uint32_t bi = (BI);                                                              \
        if (FIRST) {                                                                           \
            asm("mul.lo.u32 %0, %9, %13;\n\t"                                                  \
                "mul.hi.u32 %1, %9, %13;\n\t"                                                  \
                "mul.lo.u32 %2, %10, %13;\n\t"                                                 \
                "mul.hi.u32 %3, %10, %13;\n\t"                                                 \
                "mul.lo.u32 %4, %11, %13;\n\t"                                                 \
                "mul.hi.u32 %5, %11, %13;\n\t"                                                 \
                "mul.lo.u32 %6, %12, %13;\n\t"                                                 \
                "mul.hi.u32 %7, %12, %13;\n\t"                                                 \
                "mov.u32 %8, 0;"                                                               \
                : "=r"(e0), "=r"(e1), "=r"(e2), "=r"(e3), "=r"(e4), "=r"(e5), "=r"(e6),        \
                  "=r"(e7), "=r"(e8)                                                           \
                : "r"(x[0]), "r"(x[2]), "r"(x[4]), "r"(x[6]), "r"(bi));                        \
        } else {                                                                               \
            asm("mad.lo.cc.u32  %0, %9, %13, %0;\n\t"                                          \
                "madc.hi.cc.u32 %1, %9, %13, %1;\n\t"                                          \
                "madc.lo.cc.u32 %2, %10, %13, %2;\n\t"                                         \
                "madc.hi.cc.u32 %3, %10, %13, %3;\n\t"                                         \
                "madc.lo.cc.u32 %4, %11, %13, %4;\n\t"                                         \
                "madc.hi.cc.u32 %5, %11, %13, %5;\n\t"                                         \
                "madc.lo.cc.u32 %6, %12, %13, %6;\n\t"                                         \
                "madc.hi.cc.u32 %7, %12, %13, %7;\n\t"                                         \
                "addc.u32       %8, 0, 0;"                                                     \
                : "+r"(e0), "+r"(e1), "+r"(e2), "+r"(e3), "+r"(e4), "+r"(e5), "+r"(e6),        \
                  "+r"(e7), "=r"(e8)                                                           \
                : "r"(x[0]), "r"(x[2]), "r"(x[4]), "r"(x[6]), "r"(bi));                        \
        }                                                                                      \
        /* The odd limbs' products do not overlap: no carries. */                             \
        asm("mul.lo.u32 %0, %8, %12;\n\t"                                                      \
            "mul.hi.u32 %1, %8, %12;\n\t"                                                      \
            "mul.lo.u32 %2, %9, %12;\n\t"                                                      \
            "mul.hi.u32 %3, %9, %12;\n\t"                                                      \
            "mul.lo.u32 %4, %10, %12;\n\t"                                                     \
            "mul.hi.u32 %5, %10, %12;\n\t"                                                     \
            "mul.lo.u32 %6, %11, %12;\n\t"                                                     \
            "mul.hi.u32 %7, %11, %12;"                                                         \
            : "=r"(o0), "=r"(o1), "=r"(o2), "=r"(o3), "=r"(o4), "=r"(o5), "=r"(o6), "=r"(o7)   \
            : "r"(x[1]), "r"(x[3]), "r"(x[5]), "r"(x[7]), "r"(bi));                            \
        /* m = -t0 (r ≡ 1 mod 2^32); m·r0 = m and m·r1 = u + (m - [u != 0])·2^32. */           \
        const uint32_t u = e0;                                                                 \
        const uint32_t m = 0u - u;                                                             \
        const uint32_t hc = u != 0 ? ~u : 0u;                                                  \
        asm("{\n\t.reg .u32 z;\n\t"                                                            \
            "add.cc.u32     z, %8, %9;\n\t"                                                    \
            "addc.cc.u32    %0, %0, 0;\n\t"                                                    \
            "madc.lo.cc.u32 %1, %9, " CUZK_FR_STR(CUZK_FR_P2) ", %1;\n\t"                         \
            "madc.hi.cc.u32 %2, %9, " CUZK_FR_STR(CUZK_FR_P2) ", %2;\n\t"                         \
            "madc.lo.cc.u32 %3, %9, " CUZK_FR_STR(CUZK_FR_P4) ", %3;\n\t"                         \
            "madc.hi.cc.u32 %4, %9, " CUZK_FR_STR(CUZK_FR_P4) ", %4;\n\t"                         \
            "madc.lo.cc.u32 %5, %9, " CUZK_FR_STR(CUZK_FR_P6) ", %5;\n\t"                         \
            "madc.hi.cc.u32 %6, %9, " CUZK_FR_STR(CUZK_FR_P6) ", %6;\n\t"                         \
            "addc.u32       %7, %7, 0;\n\t}"                                                   \
            : "+r"(e1), "+r"(e2), "+r"(e3), "+r"(e4), "+r"(e5), "+r"(e6), "+r"(e7), "+r"(e8)   \
            : "r"(u), "r"(m));                                                                 \
        asm("add.cc.u32     %0, %0, %8;\n\t"                                                   \
            "addc.cc.u32    %1, %1, %9;\n\t"                                                   \
            "madc.lo.cc.u32 %2, %10, " CUZK_FR_STR(CUZK_FR_P3) ", %2;\n\t"                        \
            "madc.hi.cc.u32 %3, %10, " CUZK_FR_STR(CUZK_FR_P3) ", %3;\n\t"                        \
            "madc.lo.cc.u32 %4, %10, " CUZK_FR_STR(CUZK_FR_P5) ", %4;\n\t"                        \
            "madc.hi.cc.u32 %5, %10, " CUZK_FR_STR(CUZK_FR_P5) ", %5;\n\t"                        \
            "madc.lo.cc.u32 %6, %10, " CUZK_FR_STR(CUZK_FR_P7) ", %6;\n\t"                        \
            "madc.hi.u32    %7, %10, " CUZK_FR_STR(CUZK_FR_P7) ", %7;"                            \
            : "+r"(o0), "+r"(o1), "+r"(o2), "+r"(o3), "+r"(o4), "+r"(o5), "+r"(o6), "+r"(o7)   \
            : "r"(u), "r"(hc), "r"(m));                                                        \
        /* Divide by 2^32 and fold O in. The sum is below 2r < 2^256, so nothing carries out   \
           of limb 7 and O has no limb 8. */                                                   \
        asm("add.cc.u32  %0, %8, %16;\n\t"                                                     \
            "addc.cc.u32 %1, %9, %17;\n\t"                                                     \
            "addc.cc.u32 %2, %10, %18;\n\t"                                                    \
            "addc.cc.u32 %3, %11, %19;\n\t"                                                    \
            "addc.cc.u32 %4, %12, %20;\n\t"                                                    \
            "addc.cc.u32 %5, %13, %21;\n\t"                                                    \
            "addc.cc.u32 %6, %14, %22;\n\t"                                                    \
            "addc.u32    %7, %15, %23;"                                                        \
            : "=r"(e0), "=r"(e1), "=r"(e2), "=r"(e3), "=r"(e4), "=r"(e5), "=r"(e6), "=r"(e7)   \
            : "r"(e1), "r"(e2), "r"(e3), "r"(e4), "r"(e5), "r"(e6), "r"(e7), "r"(e8),          \
              "r"(o0), "r"(o1), "r"(o2), "r"(o3), "r"(o4), "r"(o5), "r"(o6), "r"(o7));         \
    }

    CUZK_ROUND(true, b.val[0])
    CUZK_ROUND(false, b.val[1])
    CUZK_ROUND(false, b.val[2])
    CUZK_ROUND(false, b.val[3])
    CUZK_ROUND(false, b.val[4])
    CUZK_ROUND(false, b.val[5])
    CUZK_ROUND(false, b.val[6])
    CUZK_ROUND(false, b.val[7])
#undef CUZK_ROUND

    const uint32_t t[8] = {e0, e1, e2, e3, e4, e5, e6, e7};
    return reduce_once(t);
}

// a·b·2^-256 mod r for a, b < r (fr_mont.cuh: the two accumulators swap roles between rounds
// instead of being folded together each round, as mont_mul_folded does). Measured on the H200
// (2026-11-29): the same 53.2 G/s as mont_mul_folded with 16 blocks of 256 threads per SM, 51.6
// against 50.5 G/s with the NTT passes' 2 blocks per SM, and about 5% off every NTT size (fewer
// ALU instructions: ptxas counts 16.0 k instead of 16.8 k in the DIF pass kernel).
__device__ __forceinline__ fr_t mont_mul(const fr_t& a, const fr_t& b) {
    uint32_t t[8];
    mont::mul_2r(t, a.val, b.val);
    return reduce_once(t);
}

// x + y over eight limbs; the carry out of limb 7 is dropped (the callers' sums are below 2^256).
__device__ __forceinline__ void add_limbs(uint32_t s[8], const uint32_t x[8], const uint32_t y[8]) {
    asm("add.cc.u32  %0, %8, %16;\n\t"
        "addc.cc.u32 %1, %9, %17;\n\t"
        "addc.cc.u32 %2, %10, %18;\n\t"
        "addc.cc.u32 %3, %11, %19;\n\t"
        "addc.cc.u32 %4, %12, %20;\n\t"
        "addc.cc.u32 %5, %13, %21;\n\t"
        "addc.cc.u32 %6, %14, %22;\n\t"
        "addc.u32    %7, %15, %23;"
        : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]), "=r"(s[6]),
          "=r"(s[7])
        : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]),
          "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]), "r"(y[7]));
}

// a + b mod r (a + b < 2r < 2^256: no carry out of the top limb).
__device__ __forceinline__ fr_t add_mod(const fr_t& a, const fr_t& b) {
    uint32_t s[8];
    add_limbs(s, a.val, b.val);
    return reduce_once(s);
}

// a − b, with m (r or 2r, little-endian limbs) added back when the difference borrows.
__device__ __forceinline__ fr_t sub_wrap(const fr_t& a, const fr_t& b, const uint32_t (&m)[8]) {
    uint32_t d[8], borrow;
    asm("sub.cc.u32  %0, %9, %17;\n\t"
        "subc.cc.u32 %1, %10, %18;\n\t"
        "subc.cc.u32 %2, %11, %19;\n\t"
        "subc.cc.u32 %3, %12, %20;\n\t"
        "subc.cc.u32 %4, %13, %21;\n\t"
        "subc.cc.u32 %5, %14, %22;\n\t"
        "subc.cc.u32 %6, %15, %23;\n\t"
        "subc.cc.u32 %7, %16, %24;\n\t"
        "subc.u32    %8, 0, 0;"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]),
          "=r"(d[7]), "=r"(borrow)
        : "r"(a.val[0]), "r"(a.val[1]), "r"(a.val[2]), "r"(a.val[3]), "r"(a.val[4]),
          "r"(a.val[5]), "r"(a.val[6]), "r"(a.val[7]), "r"(b.val[0]), "r"(b.val[1]),
          "r"(b.val[2]), "r"(b.val[3]), "r"(b.val[4]), "r"(b.val[5]), "r"(b.val[6]),
          "r"(b.val[7]));
    // borrow is all ones when a < b: add m back, masked.
    uint32_t back[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) back[i] = m[i] & borrow;
    fr_t out;
    add_limbs(out.val, d, back);
    return out;
}

// a - b mod r.
__device__ __forceinline__ fr_t sub_mod(const fr_t& a, const fr_t& b) {
    const uint32_t r[8] = {CUZK_FR_P0, CUZK_FR_P1, CUZK_FR_P2, CUZK_FR_P3,
                           CUZK_FR_P4, CUZK_FR_P5, CUZK_FR_P6, CUZK_FR_P7};
    return sub_wrap(a, b, r);
}

// Lazily reduced arithmetic: values below 2r instead of r, for a sequence of operations that
// ends in `reduce` (the NTT's passes: each keeps its values below 2r and stores them reduced).
// Saves the conditional subtraction of every product; sums and differences cost what the
// reduced ones do.

// w·v·2^-256 mod r, below 2r, for w < r (a twiddle, reduced) and v < 2r. With w the multiplicand
// added every round, the running value stays below w + r < 2r, and the result is below
// w·v/2^256 + r < 2r²/2^256 + r < 1.91r.
//
// With CUZK_FR_MUL_NOINLINE (a variant image, not yet measured) the product is one called
// function instead of a copy inlined at every use: the NTT pass kernels inline about forty of
// them (some 16k instructions), far more than the instruction cache holds, and Nsight Compute
// finds their warps stalled on instruction fetch (docs/perf.md, eighteenth session).
#ifdef CUZK_FR_MUL_NOINLINE
__device__ __noinline__ fr_t mul_lazy_call(const fr_t w, const fr_t v) {
    fr_t out;
    mont::mul_2r(out.val, w.val, v.val);
    return out;
}
#endif
// mul_lazy's result by the integer pipes (fr_mont.cuh), whatever the image's default.
__device__ __forceinline__ fr_t mul_lazy_u32(const fr_t& w, const fr_t& v) {
    fr_t out;
    mont::mul_2r(out.val, w.val, v.val);
    return out;
}

// mul_lazy's result by the FP64 pipe (fr_f64.cuh): the same value for the same inputs.
__device__ __forceinline__ fr_t mul_lazy_f64(const fr_t& w, const fr_t& v) {
    fr_t out;
    f64::mul_2r(out.val, w.val, v.val);
    return out;
}

__device__ __forceinline__ fr_t mul_lazy(const fr_t& w, const fr_t& v) {
#ifdef CUZK_FR_MUL_NOINLINE
    return mul_lazy_call(w, v);
#else
    fr_t out;
    mont::mul_2r(out.val, w.val, v.val);
    return out;
#endif
}

// x mod r for x < 2r.
__device__ __forceinline__ fr_t reduce(const fr_t& x) { return reduce_once(x.val); }

// a + b mod 2r for a, b < 2r: the sum (below 4r) carries out of limb 7 when it is 2^256 or more,
// and 2r is subtracted when it is 2r or more.
__device__ __forceinline__ fr_t add_2r(const fr_t& a, const fr_t& b) {
    uint32_t s[8], d[8], keep;
    asm("{\n\t.reg .u32 c;\n\t"
        "add.cc.u32  %8, %17, %25;\n\t"
        "addc.cc.u32 %9, %18, %26;\n\t"
        "addc.cc.u32 %10, %19, %27;\n\t"
        "addc.cc.u32 %11, %20, %28;\n\t"
        "addc.cc.u32 %12, %21, %29;\n\t"
        "addc.cc.u32 %13, %22, %30;\n\t"
        "addc.cc.u32 %14, %23, %31;\n\t"
        "addc.cc.u32 %15, %24, %32;\n\t"
        "addc.u32    c, 0, 0;\n\t"
        "sub.cc.u32  %0, %8, " CUZK_FR_STR(CUZK_FR_Q0) ";\n\t"
        "subc.cc.u32 %1, %9, " CUZK_FR_STR(CUZK_FR_Q1) ";\n\t"
        "subc.cc.u32 %2, %10, " CUZK_FR_STR(CUZK_FR_Q2) ";\n\t"
        "subc.cc.u32 %3, %11, " CUZK_FR_STR(CUZK_FR_Q3) ";\n\t"
        "subc.cc.u32 %4, %12, " CUZK_FR_STR(CUZK_FR_Q4) ";\n\t"
        "subc.cc.u32 %5, %13, " CUZK_FR_STR(CUZK_FR_Q5) ";\n\t"
        "subc.cc.u32 %6, %14, " CUZK_FR_STR(CUZK_FR_Q6) ";\n\t"
        "subc.cc.u32 %7, %15, " CUZK_FR_STR(CUZK_FR_Q7) ";\n\t"
        "subc.u32    %16, c, 0;\n\t}"
        : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3]), "=r"(d[4]), "=r"(d[5]), "=r"(d[6]),
          "=r"(d[7]), "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3]), "=r"(s[4]), "=r"(s[5]),
          "=r"(s[6]), "=r"(s[7]), "=r"(keep)
        : "r"(a.val[0]), "r"(a.val[1]), "r"(a.val[2]), "r"(a.val[3]), "r"(a.val[4]),
          "r"(a.val[5]), "r"(a.val[6]), "r"(a.val[7]), "r"(b.val[0]), "r"(b.val[1]),
          "r"(b.val[2]), "r"(b.val[3]), "r"(b.val[4]), "r"(b.val[5]), "r"(b.val[6]),
          "r"(b.val[7]));
    // keep = carry − borrow: all ones only when the sum did not carry and is below 2r (a carry
    // always borrows, since the sum is below 4r).
    fr_t out;
#pragma unroll
    for (int i = 0; i < 8; ++i) out.val[i] = (s[i] & keep) | (d[i] & ~keep);
    return out;
}

// a − b mod 2r for a, b < 2r: 2r added back when the difference borrows.
__device__ __forceinline__ fr_t sub_2r(const fr_t& a, const fr_t& b) {
    const uint32_t q[8] = {CUZK_FR_Q0, CUZK_FR_Q1, CUZK_FR_Q2, CUZK_FR_Q3,
                           CUZK_FR_Q4, CUZK_FR_Q5, CUZK_FR_Q6, CUZK_FR_Q7};
    return sub_wrap(a, b, q);
}

}  // namespace fr
}  // namespace cuzk
