//! Montgomery multiplication in Fr on the FP64 pipe: a second form of fr_mont.cuh's `mul_2r`,
//! same inputs, same result (a·b·2^-256 mod r, below 2r, for a < r and b < 2r).
//!
//! fr_mont.cuh's form issues 224 32-bit multiply-adds and about 200 carry additions a product.
//! This form moves the multiplications to the double-precision pipe, which a GPU with
//! full-rate FP64 (sm_80, sm_90) runs beside the integer ones:
//!
//! - Operands are split into five 52-bit limbs held as exact doubles (the last one 48 bits).
//! - A 52×52-bit product p < 2^104 is split exactly by two fused multiply-adds: h =
//!   fma_rz(x, y, 2^104) is 2^104 + ⌊p / 2^52⌋·2^52, so its bit pattern is the bit pattern of
//!   2^104 plus ⌊p / 2^52⌋; then l = fma(x, y, (2^104 + 2^52) − h) is 2^52 + (p mod 2^52),
//!   exactly representable, whose bit pattern is that of 2^52 plus p mod 2^52. Three FP64
//!   instructions a limb product, no conversion: the bit patterns are added into 64-bit integer
//!   columns, and the constant exponent bits they carry, multiples of 2^52, are subtracted
//!   once per column (they never touch the low 52 bits that the reduction reads).
//! - The reduction runs digit by digit on the columns (separated operand scanning): four
//!   52-bit digits and a last 48-bit one, so that R stays 2^256. r ≡ 1 − 2^32 (mod 2^52) makes
//!   the quotient digit m = −c·(1 + 2^32) mod 2^52 from the column c, with no multiplication.
//!
//! 25 + 25 limb products: 166 FP64 instructions and about 180 integer ones a product (sm_90).
//! Measured on an H200 (docs/perf.md, twentieth session): 51.9 G products/s against 50.8 for
//! fr_mont.cuh's, 8% more with one operand already in limbs, and 8–12% more than two chains of
//! either when one chain of each runs per thread; inside the NTT passes, all or half of their
//! products in this form measured 4–18% slower (registers), so the passes keep fr_mont.cuh's.
//! Every helper runs on the host as well (the FP64 operations emulated exactly with 128-bit
//! integers), so that the algorithm can be checked on a CPU against `mont::mul_2r`.
#pragma once

#include <stdint.h>
#ifndef __CUDA_ARCH__
#include <string.h>
#endif

namespace cuzk {
namespace fr {
namespace f64 {

#ifdef __CUDA_ARCH__
#define CUZK_F64_FN __device__ __forceinline__
CUZK_F64_FN double fma_rz(double a, double b, double c) { return __fma_rz(a, b, c); }
CUZK_F64_FN double sub_rn(double a, double b) { return __dsub_rn(a, b); }
CUZK_F64_FN uint64_t to_bits(double x) { return (uint64_t)__double_as_longlong(x); }
CUZK_F64_FN double from_bits(uint64_t x) { return __longlong_as_double((long long)x); }
#else
#define CUZK_F64_FN inline
inline uint64_t to_bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}
inline double from_bits(uint64_t u) {
    double x;
    memcpy(&x, &u, 8);
    return x;
}
// An integer-valued double as an exact 128-bit integer.
inline __int128 to_int(double x) {
    const uint64_t u = to_bits(x);
    const int e = (int)((u >> 52) & 0x7ff);
    if (e == 0) return 0;  // only zero occurs here
    const __int128 mant = (__int128)((u & ((1ull << 52) - 1)) | (1ull << 52));
    const int shift = e - 1075;
    const __int128 mag = shift >= 0 ? mant << shift : mant >> -shift;
    return (u >> 63) ? -mag : mag;
}
// The double nearest x toward zero.
inline double from_int_rz(__int128 x) {
    const bool neg = x < 0;
    unsigned __int128 mag = neg ? -(unsigned __int128)x : (unsigned __int128)x;
    int shift = 0;
    while ((mag >> shift) >= ((unsigned __int128)1 << 53)) ++shift;
    const double d = (double)(uint64_t)(mag >> shift) * (double)((unsigned __int128)1 << shift);
    return neg ? -d : d;
}
// Exact for the integer-valued operands used here.
inline double fma_rz(double a, double b, double c) { return from_int_rz(to_int(a) * to_int(b) + to_int(c)); }
inline double sub_rn(double a, double b) { return from_int_rz(to_int(a) - to_int(b)); }
#endif

constexpr uint64_t MASK52 = (1ull << 52) - 1;
constexpr uint64_t BITS_2_52 = 0x4330000000000000ull;   // bit pattern of 2^52
constexpr uint64_t BITS_2_104 = 0x4670000000000000ull;  // bit pattern of 2^104
constexpr double TWO_52 = 4503599627370496.0;
constexpr double TWO_104 = 20282409603651670423947251286016.0;
constexpr double TWO_104_PLUS_52 = 20282409603651674927546878656512.0;  // 2^104 + 2^52, exact

#ifdef __CUDACC__
#define CUZK_F64_CONST __host__ __device__ constexpr
#else
#define CUZK_F64_CONST constexpr
#endif

// r in 52-bit limbs.
CUZK_F64_CONST double r_limb(int j) {
    return j == 0   ? 4503595332403201.0   // 0xfffff00000001
           : j == 1 ? 52776117727231.0     // 0x2fffe5bfefff
           : j == 2 ? 2711223964777892.0   // 0x9a1d80553bda4
           : j == 3 ? 2203984808738944.0   // 0x7d483339d8080
                    : 127464551688605.0;   // 0x73eda753299d
}

// The exponent bits that the limb products leave in column k: each product of limbs i and j
// adds 2^52's bit pattern to column i + j and 2^104's to column i + j + 1, once for a·b and
// once for m·r.
CUZK_F64_CONST uint32_t pairs(int k) { return k < 0 || k > 8 ? 0u : (uint32_t)(k < 5 ? k + 1 : 9 - k); }
CUZK_F64_CONST uint64_t column_bias(int k) { return 2 * (pairs(k) * BITS_2_52 + pairs(k - 1) * BITS_2_104); }

// x as an exact double, for x < 2^52.
CUZK_F64_FN double limb(uint64_t x) { return sub_rn(from_bits(BITS_2_52 | x), TWO_52); }

// Eight 32-bit limbs (a value below 2^256) as five 52-bit ones.
CUZK_F64_FN void split(double out[5], const uint32_t w[8]) {
    const uint64_t a0 = w[0] | (uint64_t)w[1] << 32, a1 = w[2] | (uint64_t)w[3] << 32;
    const uint64_t a2 = w[4] | (uint64_t)w[5] << 32, a3 = w[6] | (uint64_t)w[7] << 32;
    out[0] = limb(a0 & MASK52);
    out[1] = limb((a0 >> 52 | a1 << 12) & MASK52);
    out[2] = limb((a1 >> 40 | a2 << 24) & MASK52);
    out[3] = limb((a2 >> 28 | a3 << 36) & MASK52);
    out[4] = limb(a3 >> 16);
}

// x·y (each below 2^52) added to columns lo (its low 52 bits) and hi (the rest), with the
// exponent bits that column_bias accounts for.
CUZK_F64_FN void mad(uint64_t& lo, uint64_t& hi, double x, double y) {
    const double h = fma_rz(x, y, TWO_104);
    const double l = fma_rz(x, y, sub_rn(TWO_104_PLUS_52, h));
    hi += to_bits(h);
    lo += to_bits(l);
}

// The quotient digit for column c: −c·r^-1 mod 2^bits (r^-1 ≡ 1 + 2^32 mod 2^52).
CUZK_F64_FN double digit(uint64_t c, uint64_t mask) { return limb((0 - (c + (c << 32))) & mask); }

// mul_2r with a already split into limbs (`split`): what a table of limbs would save.
CUZK_F64_FN void mul_2r_limbs(uint32_t out[8], const double x[5], const uint32_t b[8]) {
    double y[5];
    split(y, b);
    uint64_t c[10];
#pragma unroll
    for (int k = 0; k < 10; ++k) c[k] = 0 - column_bias(k);
#pragma unroll
    for (int i = 0; i < 5; ++i) {
#pragma unroll
        for (int j = 0; j < 5; ++j) mad(c[i + j], c[i + j + 1], x[i], y[j]);
    }
#pragma unroll
    for (int i = 0; i < 5; ++i) {
        const double m = digit(c[i], i < 4 ? MASK52 : (1ull << 48) - 1);
#pragma unroll
        for (int j = 0; j < 5; ++j) mad(c[i + j], c[i + j + 1], m, r_limb(j));
        // Column i is now exact and its low 52 (last: 48) bits are zero.
        if (i < 4) c[i + 1] += c[i] >> 52;
    }
    // The result is c[4]/2^48 + c[5]·2^4 + c[6]·2^56 + ...: normalise to 52-bit limbs.
    const uint64_t low4 = (c[4] >> 48) & 0xf;
    c[5] += c[4] >> 52;
#pragma unroll
    for (int k = 5; k < 9; ++k) {
        c[k + 1] += c[k] >> 52;
        c[k] &= MASK52;
    }
    const uint64_t w0 = low4 | c[5] << 4 | c[6] << 56;
    const uint64_t w1 = c[6] >> 8 | c[7] << 44;
    const uint64_t w2 = c[7] >> 20 | c[8] << 32;
    const uint64_t w3 = c[8] >> 32 | c[9] << 20;
    out[0] = (uint32_t)w0;
    out[1] = (uint32_t)(w0 >> 32);
    out[2] = (uint32_t)w1;
    out[3] = (uint32_t)(w1 >> 32);
    out[4] = (uint32_t)w2;
    out[5] = (uint32_t)(w2 >> 32);
    out[6] = (uint32_t)w3;
    out[7] = (uint32_t)(w3 >> 32);
}

// a·b·2^-256 mod r, below 2r, for a < r and b < 2r (fr_mont.cuh's mont::mul_2r).
CUZK_F64_FN void mul_2r(uint32_t out[8], const uint32_t a[8], const uint32_t b[8]) {
    double x[5];
    split(x, a);
    mul_2r_limbs(out, x, b);
}

#undef CUZK_F64_FN
#undef CUZK_F64_CONST

}  // namespace f64
}  // namespace fr
}  // namespace cuzk
