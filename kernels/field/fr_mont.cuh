//! Montgomery multiplication in Fr (BLS12-381's scalar field r), the NTT's hot spot.
//!
//! Eight 32-bit limbs, little-endian, R = 2^256. The product is accumulated in two limb
//! vectors, one for the products of a's even limbs and one for its odd limbs (shifted up one
//! limb), so that every 32x32 product lands in a multiply-add carry chain (mad.lo.cc /
//! madc.hi.cc) that never carries into a limb the other chain writes. Between rounds the two
//! vectors swap roles instead of being added together: dividing by 2^32 turns the odd vector
//! into the even one, and the old even vector, read two limbs further up, becomes the odd one
//! while the next round's products are added into it. That leaves three ALU instructions per
//! round for the bookkeeping, against the eight-limb addition a fold per round costs.
//!
//! The reduction uses the shape of r: r ≡ 1 (mod 2^32) makes the quotient digit m = −t0, and
//! r's second limb 2^32 − 1 makes m·r1 = (t0) + (m − [t0 ≠ 0])·2^32, so each round needs 12
//! products for m·r instead of 17, 224 products per multiplication in all.
//!
//! The helpers below are single PTX instructions; on the host (`__CUDA_ARCH__` undefined) they
//! emulate the carry flag, so that the algorithm itself can be checked on a CPU.
#pragma once

#include <stdint.h>

namespace cuzk {
namespace fr {
namespace mont {

#ifdef __CUDA_ARCH__
#define CUZK_MONT_FN __device__ __forceinline__
#else
#define CUZK_MONT_FN inline
static thread_local uint32_t host_carry;
#endif

// Carry-chain instructions are `asm volatile` so that they keep their order: the carry flag
// is state the compiler does not see.
#ifdef __CUDA_ARCH__
#define CUZK_MONT_OP2(NAME, INSN)                                                                  \
    __device__ __forceinline__ uint32_t NAME(uint32_t a, uint32_t b) {                             \
        uint32_t r;                                                                                \
        asm volatile(INSN " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                              \
        return r;                                                                                  \
    }
#define CUZK_MONT_OP3(NAME, INSN)                                                                  \
    __device__ __forceinline__ uint32_t NAME(uint32_t a, uint32_t b, uint32_t c) {                 \
        uint32_t r;                                                                                \
        asm volatile(INSN " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));                  \
        return r;                                                                                  \
    }
CUZK_MONT_OP2(add_cc, "add.cc.u32")
CUZK_MONT_OP2(addc_cc, "addc.cc.u32")
CUZK_MONT_OP2(addc, "addc.u32")
CUZK_MONT_OP3(mad_lo_cc, "mad.lo.cc.u32")
CUZK_MONT_OP3(madc_lo_cc, "madc.lo.cc.u32")
CUZK_MONT_OP3(madc_hi_cc, "madc.hi.cc.u32")
CUZK_MONT_OP3(madc_hi, "madc.hi.u32")
#undef CUZK_MONT_OP2
#undef CUZK_MONT_OP3
#else
inline uint32_t add3(uint64_t s) {
    host_carry = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
inline uint32_t add_cc(uint32_t a, uint32_t b) { return add3((uint64_t)a + b); }
inline uint32_t addc_cc(uint32_t a, uint32_t b) { return add3((uint64_t)a + b + host_carry); }
inline uint32_t addc(uint32_t a, uint32_t b) { return (uint32_t)((uint64_t)a + b + host_carry); }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return add3((uint64_t)(uint32_t)((uint64_t)a * b) + c);
}
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) {
    return add3((uint64_t)(uint32_t)((uint64_t)a * b) + c + host_carry);
}
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) {
    return add3((((uint64_t)a * b) >> 32) + c + host_carry);
}
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) {
    return (uint32_t)((((uint64_t)a * b) >> 32) + c + host_carry);
}
#endif

CUZK_MONT_FN uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }
CUZK_MONT_FN uint32_t mul_hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }

// r's limbs.
constexpr uint32_t R2 = 0xfffe5bfe, R3 = 0x53bda402, R4 = 0x09a1d805, R5 = 0x3339d808,
                   R6 = 0x299d7d48, R7 = 0x73eda753;

// One round. On entry (not first) the running value is e + o·2^32 with e[0] already zero
// (the previous round's reduced limb); e and o swap roles here: the value divided by 2^32 is
// o (limbs 0..7) plus e[1..7] at limbs 0..6, so o becomes the even vector and e, read two
// limbs up, the odd one. On exit the value is o + e·2^32 (roles as named by the caller of the
// next round) with o[0] reduced to zero, which the next round never reads.
//
// Here `ev` is the vector aligned at limb 0 for this round and `od` the one aligned at limb 1.
template <bool FIRST>
CUZK_MONT_FN void round(uint32_t ev[8], uint32_t od[8], const uint32_t a[8], uint32_t bi) {
    if (FIRST) {
#pragma unroll
        for (int j = 0; j < 8; j += 2) {
            ev[j] = mul_lo(a[j], bi);
            ev[j + 1] = mul_hi(a[j], bi);
            od[j] = mul_lo(a[j + 1], bi);
            od[j + 1] = mul_hi(a[j + 1], bi);
        }
    } else {
        // od holds last round's even vector (limb 0 zero): limb 1 joins ev[0], the rest move
        // down two places while the odd products are added in.
        ev[0] = add_cc(ev[0], od[1]);
#pragma unroll
        for (int j = 0; j < 6; j += 2) {
            od[j] = madc_lo_cc(a[j + 1], bi, od[j + 2]);
            od[j + 1] = madc_hi_cc(a[j + 1], bi, od[j + 3]);
        }
        od[6] = madc_lo_cc(a[7], bi, 0);
        od[7] = madc_hi(a[7], bi, 0);
        ev[0] = mad_lo_cc(a[0], bi, ev[0]);
        ev[1] = madc_hi_cc(a[0], bi, ev[1]);
#pragma unroll
        for (int j = 2; j < 8; j += 2) {
            ev[j] = madc_lo_cc(a[j], bi, ev[j]);
            ev[j + 1] = madc_hi_cc(a[j], bi, ev[j + 1]);
        }
        od[7] = addc(od[7], 0);
    }
    // m = −ev[0]; m·r0 = m, m·r1 = u + (m − [u ≠ 0])·2^32 with u = ev[0].
    const uint32_t u = ev[0];
    const uint32_t m = 0u - u;
    const uint32_t hc = u != 0 ? ~u : 0u;
    od[0] = add_cc(od[0], u);
    od[1] = addc_cc(od[1], hc);
    od[2] = madc_lo_cc(m, R3, od[2]);
    od[3] = madc_hi_cc(m, R3, od[3]);
    od[4] = madc_lo_cc(m, R5, od[4]);
    od[5] = madc_hi_cc(m, R5, od[5]);
    od[6] = madc_lo_cc(m, R7, od[6]);
    od[7] = madc_hi(m, R7, od[7]);
    (void)add_cc(u, m);  // limb 0 becomes zero; only its carry matters
    ev[1] = addc_cc(ev[1], 0);
    ev[2] = madc_lo_cc(m, R2, ev[2]);
    ev[3] = madc_hi_cc(m, R2, ev[3]);
    ev[4] = madc_lo_cc(m, R4, ev[4]);
    ev[5] = madc_hi_cc(m, R4, ev[5]);
    ev[6] = madc_lo_cc(m, R6, ev[6]);
    ev[7] = madc_hi_cc(m, R6, ev[7]);
    od[7] = addc(od[7], 0);
}

// a·b·2^-256 mod r, below 2r (not reduced), for a, b < r.
CUZK_MONT_FN void mul_2r(uint32_t out[8], const uint32_t a[8], const uint32_t b[8]) {
    uint32_t e[8], o[8];
    round<true>(e, o, a, b[0]);
    round<false>(o, e, a, b[1]);
    round<false>(e, o, a, b[2]);
    round<false>(o, e, a, b[3]);
    round<false>(e, o, a, b[4]);
    round<false>(o, e, a, b[5]);
    round<false>(e, o, a, b[6]);
    round<false>(o, e, a, b[7]);
    // The value is o + e·2^32 with o[0] zero: divided by 2^32 it is e + o[1..7].
    out[0] = add_cc(e[0], o[1]);
    out[1] = addc_cc(e[1], o[2]);
    out[2] = addc_cc(e[2], o[3]);
    out[3] = addc_cc(e[3], o[4]);
    out[4] = addc_cc(e[4], o[5]);
    out[5] = addc_cc(e[5], o[6]);
    out[6] = addc_cc(e[6], o[7]);
    out[7] = addc(e[7], 0);
}

#undef CUZK_MONT_FN

}  // namespace mont
}  // namespace fr
}  // namespace cuzk
