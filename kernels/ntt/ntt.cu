//! NTT over Fr: the pass kernels of `crates/cuzk-ntt/src/plan.rs` (DIF and DIT), bit reversal,
//! the tiny-size transform, the Groth16 H step's product and its subtraction fused into the
//! final bit reversal, and arithmetic checks.
//!
//! The plan module documents the decomposition and holds a CPU model of these kernels, line for
//! line; keep the two in step. Exported names: cuzk_ntt_*.
#include "field/fr_arith.cuh"

namespace cuzk {
namespace ntt {

using fr::add_2r;
using fr::add_mod;
using fr::mont_mul;
using fr::mont_mul_folded;
using fr::mul_lazy;
using fr::reduce;
using fr::sub_2r;
using fr::sub_mod;

// Mirrors `PassInfo` in crates/cuzk-ntt/src/gpu/launch.rs.
struct PassInfo {
    uint32_t log_n;
    uint32_t s_lo;             // lowest index bit of the pass; lines are 2^s_lo apart
    uint32_t bits;             // stages in the pass (3..10 for the pass kernels)
    uint32_t log_lines;        // lines per block, log2
    uint32_t num_groups;       // blocks' worth of lines per vector
    uint32_t flags;            // FLAG_* below
    uint32_t factor_lo_bits;   // split of the pass-factor table
    uint32_t scale_lo_bits;    // split of the scale table
};

constexpr uint32_t FLAG_FACTOR = 1;        // the pass has factors (s_lo > 0)
constexpr uint32_t FLAG_FACTOR_SPLIT = 2;  // ... from two tables
constexpr uint32_t FLAG_SCALE_CONST = 4;   // multiply by scale_lo[0]
constexpr uint32_t FLAG_SCALE_POWERS = 8;  // multiply by scale_lo[i & mask] · scale_hi[i >> bits]
constexpr uint32_t FLAG_DIT = 16;          // tiny kernel only: DIT instead of DIF

__device__ __forceinline__ fr_t load_global(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 x = q[0], y = q[1];
    fr_t r;
    r.val[0] = x.x; r.val[1] = x.y; r.val[2] = x.z; r.val[3] = x.w;
    r.val[4] = y.x; r.val[5] = y.y; r.val[6] = y.z; r.val[7] = y.w;
    return r;
}

// Tables are read-only for the kernel's lifetime: the non-coherent path caches them in L1.
__device__ __forceinline__ fr_t load_table(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 x = __ldg(q), y = __ldg(q + 1);
    fr_t r;
    r.val[0] = x.x; r.val[1] = x.y; r.val[2] = x.z; r.val[3] = x.w;
    r.val[4] = y.x; r.val[5] = y.y; r.val[6] = y.z; r.val[7] = y.w;
    return r;
}

__device__ __forceinline__ void store_global(fr_t* p, const fr_t& v) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(v.val[0], v.val[1], v.val[2], v.val[3]);
    q[1] = make_uint4(v.val[4], v.val[5], v.val[6], v.val[7]);
}

__device__ __forceinline__ uint32_t rev_bits(uint32_t x, uint32_t bits) {
    return bits == 0 ? 0u : __brev(x) >> (32 - bits);
}

// Radix (log2) of round q of a pass of `bits` stages with 2^ELOG elements a thread: ELOG
// first, the rest split evenly (plan::rounds).
// With 8 elements the longer rounds come first; with 4 the shorter ones do, so that the last
// round, which needs no factors after it, is a full one.
template <uint32_t ELOG>
__device__ __forceinline__ uint32_t round_radix(uint32_t q, uint32_t bits) {
    if (q == 0) return bits < ELOG ? bits : ELOG;
    const uint32_t rest = bits - ELOG, parts = (rest + ELOG - 1) / ELOG;
    const uint32_t longer = ELOG == 3 ? (q - 1) < rest % parts : (q - 1) >= parts - rest % parts;
    return rest / parts + (longer ? 1u : 0u);
}

template <uint32_t ELOG>
__device__ __forceinline__ uint32_t num_rounds(uint32_t bits) {
    return bits <= ELOG ? 1u : 1u + (bits - ELOG + ELOG - 1) / ELOG;
}

// plan::round_position: the ELOG register bits inserted into the thread index at bit b.
template <uint32_t ELOG>
__device__ __forceinline__ uint32_t round_position(uint32_t theta, uint32_t j, uint32_t b) {
    const uint32_t lo = theta & ((1u << b) - 1);
    return ((theta >> b) << (b + ELOG)) | (j << b) | lo;
}

// Whether a line's threads are consecutive (a line is whole warps, or lies in one warp) rather
// than interleaved with the block's other lines: only where the lines are adjacent in memory
// (s_lo = 0). Interleaving in strided passes makes a warp's loads read neighbouring lines'
// elements together; made consecutive there too (with per-line barriers), the 2^27 strided
// passes measured 18–24% slower (docs/perf.md, twenty-second session).
__device__ __forceinline__ bool line_major(const PassInfo& p) { return p.s_lo == 0; }

// The barrier of an exchange. With four elements a thread, a line of consecutive threads waits
// only for its own warps (a named barrier, or the warp's own when the line lies in one warp),
// so the lines of a block fall out of step and one line's exchange overlaps another's products:
// that pass measured 4.7% faster at 2^24. With eight a thread the same change measured 7.8%
// slower at 2^27 (docs/perf.md, twenty-second session), so those passes keep the block's.
template <uint32_t ELOG>
__device__ __forceinline__ void line_sync(const PassInfo& p, uint32_t g) {
    if (ELOG == 2 && line_major(p)) {
        const uint32_t per_line = p.bits - ELOG;  // log2 of a line's threads
        if (per_line <= 5) {
            __syncwarp();
        } else {
            // Barrier 0 is __syncthreads'; a block holds at most 2^(8 - 6) = 4 such lines.
            asm volatile("bar.sync %0, %1;" ::"r"(1u + g), "r"(1u << per_line) : "memory");
        }
        return;
    }
    __syncthreads();
}

// plan::smem_index: lines interleaved in strided passes, swizzled so that every round's accesses
// hit distinct banks (the swizzle depends on how many register bits a round inserts).
template <uint32_t ELOG>
__device__ __forceinline__ uint32_t smem_index(const PassInfo& p, uint32_t g, uint32_t pos) {
    const uint32_t x = line_major(p) ? (g << p.bits) | pos : (pos << p.log_lines) | g;
    const uint32_t sw = ELOG == 3
        ? (((x >> 5) & 1) * 0x09u) ^ (((x >> 6) & 1) * 0x12u) ^ (((x >> 7) & 1) * 0x1cu)
        : (((x >> 5) & 1) * 0x0au) ^ (((x >> 6) & 1) * 0x15u);
    return x ^ sw;
}

// Inside a pass every value is kept below 2r (fr::mul_lazy, add_2r, sub_2r) and reduced below r
// when the pass stores it, so passes read and write reduced values.
__device__ __forceinline__ void butterfly_dif(fr_t& a, fr_t& b) {
    const fr_t s = add_2r(a, b);
    b = sub_2r(a, b);
    a = s;
}

__device__ __forceinline__ void butterfly_dit(fr_t& a, fr_t& b) {
    const fr_t d = sub_2r(a, b);
    a = add_2r(a, b);
    b = d;
}

// v·t for a reduced table value t and v < 2r, below 2r.
__device__ __forceinline__ fr_t twist(const fr_t& v, const fr_t& t) { return mul_lazy(t, v); }

// The twiddles of a radix-8/4 group: primitive 8th and 4th roots from the pass's root table.
struct GroupRoots {
    const fr_t* roots;
    uint32_t bits;
    __device__ __forceinline__ fr_t w8(uint32_t i) const { return load_table(roots + (i << (bits - 3))); }
    __device__ __forceinline__ fr_t w4() const { return load_table(roots + (1u << (bits - 2))); }
};

// Natural order in, bit-reversed out (plan::model::dif_group).
__device__ __forceinline__ void dif8(fr_t v[8], const GroupRoots& w) {
    butterfly_dif(v[0], v[4]);
    butterfly_dif(v[1], v[5]);
    v[5] = twist(v[5], w.w8(1));
    butterfly_dif(v[2], v[6]);
    v[6] = twist(v[6], w.w4());
    butterfly_dif(v[3], v[7]);
    v[7] = twist(v[7], w.w8(3));
    butterfly_dif(v[0], v[2]);
    butterfly_dif(v[1], v[3]);
    v[3] = twist(v[3], w.w4());
    butterfly_dif(v[4], v[6]);
    butterfly_dif(v[5], v[7]);
    v[7] = twist(v[7], w.w4());
    butterfly_dif(v[0], v[1]);
    butterfly_dif(v[2], v[3]);
    butterfly_dif(v[4], v[5]);
    butterfly_dif(v[6], v[7]);
}

__device__ __forceinline__ void dif4(fr_t& x0, fr_t& x1, fr_t& x2, fr_t& x3, const GroupRoots& w) {
    butterfly_dif(x0, x2);
    butterfly_dif(x1, x3);
    x3 = twist(x3, w.w4());
    butterfly_dif(x0, x1);
    butterfly_dif(x2, x3);
}

// Bit-reversed in, natural out: the transpose of dif8.
__device__ __forceinline__ void dit8(fr_t v[8], const GroupRoots& w) {
    butterfly_dit(v[0], v[1]);
    butterfly_dit(v[2], v[3]);
    butterfly_dit(v[4], v[5]);
    butterfly_dit(v[6], v[7]);
    butterfly_dit(v[0], v[2]);
    v[3] = twist(v[3], w.w4());
    butterfly_dit(v[1], v[3]);
    butterfly_dit(v[4], v[6]);
    v[7] = twist(v[7], w.w4());
    butterfly_dit(v[5], v[7]);
    butterfly_dit(v[0], v[4]);
    v[5] = twist(v[5], w.w8(1));
    butterfly_dit(v[1], v[5]);
    v[6] = twist(v[6], w.w4());
    butterfly_dit(v[2], v[6]);
    v[7] = twist(v[7], w.w8(3));
    butterfly_dit(v[3], v[7]);
}

__device__ __forceinline__ void dit4(fr_t& x0, fr_t& x1, fr_t& x2, fr_t& x3, const GroupRoots& w) {
    butterfly_dit(x0, x1);
    butterfly_dit(x2, x3);
    butterfly_dit(x0, x2);
    x3 = twist(x3, w.w4());
    butterfly_dit(x1, x3);
}

template <bool DIT, uint32_t ELOG>
__device__ __forceinline__ void round_butterflies(fr_t v[1 << ELOG], uint32_t r, const GroupRoots& w) {
    constexpr uint32_t E = 1u << ELOG;
    if (ELOG == 3 && r == 3) {
        if (DIT) dit8(v, w); else dif8(v, w);
    } else if (r == 2) {
#pragma unroll
        for (uint32_t j = 0; j < E; j += 4) {
            if (DIT) dit4(v[j], v[j + 1], v[j + 2], v[j + 3], w);
            else dif4(v[j], v[j + 1], v[j + 2], v[j + 3], w);
        }
    } else {
#pragma unroll
        for (uint32_t j = 0; j < E; j += 2) {
            if (DIT) butterfly_dit(v[j], v[j + 1]); else butterfly_dif(v[j], v[j + 1]);
        }
    }
}

// The four-step factors between rounds (plan::model::round_factor): register j of thread theta
// in the round of base b and radix 2^r is multiplied by ω_(2^bits)^((theta mod 2^b)·rev_r(j mod
// 2^r)·2^(bits-b-r)).
template <uint32_t ELOG>
__device__ __forceinline__ void round_factors(fr_t v[1 << ELOG], uint32_t r, uint32_t b, uint32_t theta,
                                              const fr_t* roots, uint32_t bits) {
    constexpr uint32_t E = 1u << ELOG;
    const uint32_t theta_lo = theta & ((1u << b) - 1);
    const uint32_t shift = bits - b - r;
    const uint32_t mask = (1u << r) - 1;
    // Each twiddle is loaded one product ahead, so its latency hides behind the product before.
    fr_t next = load_table(roots + ((theta_lo * rev_bits(1 & mask, r)) << shift));
#pragma unroll
    for (uint32_t j = 1; j < E; ++j) {
        const fr_t tw = next;
        if (j < E - 1) next = load_table(roots + ((theta_lo * rev_bits((j + 1) & mask, r)) << shift));
        if ((j & mask) != 0) v[j] = twist(v[j], tw);
    }
}

// Moves the block's elements from one round's register layout to the next through shared
// memory: one 32-bit plane per limb, so every access is a conflict-free word access.
template <uint32_t ELOG>
__device__ __forceinline__ void exchange(fr_t v[1 << ELOG], uint32_t* smem, const PassInfo& p, uint32_t g,
                                         uint32_t theta, uint32_t b_from, uint32_t b_to) {
    constexpr uint32_t E = 1u << ELOG;
    const uint32_t plane = 1u << (p.bits + p.log_lines);
    line_sync<ELOG>(p, g);  // the previous round's (or group's) readers are done
#pragma unroll
    for (uint32_t j = 0; j < E; ++j) {
        const uint32_t i = smem_index<ELOG>(p, g, round_position<ELOG>(theta, j, b_from));
#pragma unroll
        for (int l = 0; l < 8; ++l) smem[l * plane + i] = v[j].val[l];
    }
    line_sync<ELOG>(p, g);
#pragma unroll
    for (uint32_t j = 0; j < E; ++j) {
        const uint32_t i = smem_index<ELOG>(p, g, round_position<ELOG>(theta, j, b_to));
#pragma unroll
        for (int l = 0; l < 8; ++l) v[j].val[l] = smem[l * plane + i];
    }
}

// v[j]·f(j) for j = 0..E-1, each factor fetched one product ahead so that its loads hide
// behind the product before.
template <uint32_t E, class Factor>
__device__ __forceinline__ void twist_each(fr_t v[E], Factor f) {
    fr_t next = f(0);
#pragma unroll
    for (uint32_t j = 0; j < E; ++j) {
        const fr_t t = next;
        if (j < E - 1) next = f(j + 1);
        v[j] = twist(v[j], t);
    }
}

// The pass factor ω_(2^s_hi)^e, from one table or the product of two.
__device__ __forceinline__ fr_t pass_factor(uint32_t e, const fr_t* lo, const fr_t* hi, const PassInfo& p) {
    const fr_t f = load_table(lo + (e & ((1u << p.factor_lo_bits) - 1)));
    if (p.flags & FLAG_FACTOR_SPLIT) return mont_mul(f, load_table(hi + (e >> p.factor_lo_bits)));
    return f;
}

// The scale of the element at global position `pos_global` (which holds coefficient
// rev(pos_global)): c or c·g^rev(pos_global).
__device__ __forceinline__ fr_t scale_value(uint32_t pos_global, const fr_t* lo, const fr_t* hi,
                                            const PassInfo& p) {
    if (p.flags & FLAG_SCALE_CONST) return load_table(lo);
    const uint32_t idx = rev_bits(pos_global, p.log_n);
    const fr_t a = load_table(lo + (idx & ((1u << p.scale_lo_bits) - 1)));
    return mont_mul(a, load_table(hi + (idx >> p.scale_lo_bits)));
}

__device__ __forceinline__ fr_t* pick(fr_t* v0, fr_t* v1, fr_t* v2) {
    return blockIdx.y == 0 ? v0 : (blockIdx.y == 1 ? v1 : v2);
}

// One pass (plan::model::run_pass), for passes of ELOG..10 stages, 2^ELOG elements a thread.
// Each block loops over groups of lines (a persistent grid); blockIdx.y picks the vector.
template <bool DIT, uint32_t ELOG>
__device__ __forceinline__ void pass_kernel(fr_t* data, const fr_t* roots, const fr_t* factor_lo,
                                            const fr_t* factor_hi, const fr_t* scale_lo,
                                            const fr_t* scale_hi, const PassInfo& p) {
    constexpr uint32_t E = 1u << ELOG;
    extern __shared__ uint32_t smem[];
    const uint32_t bits = p.bits;
    const uint32_t per_line = bits - ELOG;
    const uint32_t t = threadIdx.x;
    uint32_t g, theta;
    if (line_major(p)) {
        theta = t & ((1u << per_line) - 1);
        g = t >> per_line;
    } else {
        g = t & ((1u << p.log_lines) - 1);
        theta = t >> p.log_lines;
    }
    const uint32_t s_hi = p.s_lo + bits;
    const uint32_t rounds = num_rounds<ELOG>(bits);
    const GroupRoots w{roots, bits};
    const bool scaled = p.s_lo == 0 && (p.flags & (FLAG_SCALE_CONST | FLAG_SCALE_POWERS));

#pragma unroll 1
    for (uint32_t grp = blockIdx.x; grp < p.num_groups; grp += gridDim.x) {
        const uint32_t line = (grp << p.log_lines) | g;
        const uint32_t i_low = line & ((1u << p.s_lo) - 1);
        const uint32_t i_high = line >> p.s_lo;
        fr_t* base = data + (((size_t)i_high << s_hi) | i_low);
        fr_t v[E];
        if (!DIT) {
            uint32_t b = bits - ELOG;
#pragma unroll
            for (uint32_t j = 0; j < E; ++j)
                v[j] = load_global(base + ((size_t)round_position<ELOG>(theta, j, b) << p.s_lo));
            b = bits;
#pragma unroll 1
            for (uint32_t q = 0; q < rounds; ++q) {
                const uint32_t r = round_radix<ELOG>(q, bits);
                const uint32_t prev = b;
                b -= r;
                if (q > 0) exchange<ELOG>(v, smem, p, g, theta, prev, b);
                round_butterflies<false, ELOG>(v, r, w);
                if (b > 0) round_factors<ELOG>(v, r, b, theta, roots, bits);
            }
            if (p.flags & FLAG_FACTOR)
                twist_each<E>(v, [&](uint32_t j) {
                    return pass_factor(i_low * rev_bits((theta << ELOG) | j, bits), factor_lo, factor_hi, p);
                });
#pragma unroll
            for (uint32_t j = 0; j < E; ++j) {
                const uint32_t pos = (theta << ELOG) | j;
                if (scaled) v[j] = twist(v[j], scale_value((i_high << bits) | pos, scale_lo, scale_hi, p));
                store_global(base + ((size_t)pos << p.s_lo), reduce(v[j]));
            }
        } else {
#ifdef CUZK_FR_MUL_NOINLINE
            // With a called product no load may pass a call: load every element first, and
            // each factor one product ahead, as the DIF branch does.
#pragma unroll
            for (uint32_t j = 0; j < E; ++j)
                v[j] = load_global(base + ((size_t)((theta << ELOG) | j) << p.s_lo));
            if (scaled)
                twist_each<E>(v, [&](uint32_t j) {
                    return scale_value((i_high << bits) | (theta << ELOG) | j, scale_lo, scale_hi, p);
                });
            if (p.flags & FLAG_FACTOR)
                twist_each<E>(v, [&](uint32_t j) {
                    return pass_factor(i_low * rev_bits((theta << ELOG) | j, bits), factor_lo, factor_hi, p);
                });
#else
#pragma unroll
            for (uint32_t j = 0; j < E; ++j) {
                const uint32_t pos = (theta << ELOG) | j;
                v[j] = load_global(base + ((size_t)pos << p.s_lo));
                if (scaled) v[j] = twist(v[j], scale_value((i_high << bits) | pos, scale_lo, scale_hi, p));
                if (p.flags & FLAG_FACTOR)
                    v[j] = twist(v[j], pass_factor(i_low * rev_bits(pos, bits), factor_lo, factor_hi, p));
            }
#endif
            uint32_t b = 0;
#pragma unroll 1
            for (int q = (int)rounds - 1; q >= 0; --q) {
                const uint32_t r = round_radix<ELOG>((uint32_t)q, bits);
                if (q < (int)rounds - 1) {
                    const uint32_t next = b + round_radix<ELOG>((uint32_t)q + 1, bits);
                    exchange<ELOG>(v, smem, p, g, theta, b, next);
                    b = next;
                }
                if (b > 0) round_factors<ELOG>(v, r, b, theta, roots, bits);
                round_butterflies<true, ELOG>(v, r, w);
            }
#pragma unroll
            for (uint32_t j = 0; j < E; ++j)
                store_global(base + ((size_t)round_position<ELOG>(theta, j, bits - ELOG) << p.s_lo), reduce(v[j]));
        }
    }
}

// In-place bit reversal, element by element, grid-stride (small sizes). With SUB, sub[i] is
// subtracted from every element as it is read (the H step's end): data[i] ends as
// data[rev i] - sub[rev i]. Without it, elements at i = rev(i) are not touched.
template <bool SUB>
__device__ __forceinline__ void bitrev_small(fr_t* data, const fr_t* sub, uint32_t log_n) {
    const uint32_t n = 1u << log_n;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint32_t j = rev_bits(i, log_n);
        if (SUB ? i <= j : i < j) {
            fr_t a = load_global(data + i), b = load_global(data + j);
            if (SUB) {
                a = sub_mod(a, load_global(sub + i));
                b = sub_mod(b, load_global(sub + j));
            }
            store_global(data + i, b);
            store_global(data + j, a);
        }
    }
}

// In-place bit reversal for log_n >= 8 in 16x16 tiles: index (a, m, c) with 4-bit a and c
// maps to (rev c, rev m, rev a), so tile m and tile rev(m) swap with a transpose, and both are
// read and written in runs of 16 consecutive elements. 256 threads, one element per thread per
// tile. Every element is read once (a tile with m = rev(m) twice, by the same thread) and
// written once; with SUB, sub at the same index is subtracted as it is read.
template <bool SUB>
__device__ __forceinline__ void bitrev_tiled(fr_t* data, const fr_t* sub, uint32_t log_n) {
    // [limb][row][column], rows padded to 17 words so transposed reads spread over the banks.
    __shared__ uint32_t ta[8][16][17];
    __shared__ uint32_t tb[8][16][17];
    const uint32_t mid = log_n - 8;
    const uint32_t a = threadIdx.x >> 4, c = threadIdx.x & 15;
    const uint32_t ra = rev_bits(a, 4), rc = rev_bits(c, 4);
#pragma unroll 1
    for (uint32_t m = blockIdx.x; m < (1u << mid); m += gridDim.x) {
        const uint32_t m2 = rev_bits(m, mid);
        if (m2 < m) continue;  // the pair is handled from its smaller tile
        const size_t row = (size_t)a << (log_n - 4);
        const size_t ia = row | (m << 4) | c, ib = row | (m2 << 4) | c;
        fr_t xa = load_global(data + ia);
        fr_t xb = load_global(data + ib);
        if (SUB) {
            xa = sub_mod(xa, load_global(sub + ia));
            xb = sub_mod(xb, load_global(sub + ib));
        }
#pragma unroll
        for (int l = 0; l < 8; ++l) {
            ta[l][a][c] = xa.val[l];
            tb[l][a][c] = xb.val[l];
        }
        __syncthreads();
        fr_t ya, yb;
#pragma unroll
        for (int l = 0; l < 8; ++l) {
            ya.val[l] = tb[l][rc][ra];  // position (a, m, c) takes old (rev c, rev m, rev a)
            yb.val[l] = ta[l][rc][ra];
        }
        store_global(data + ia, ya);
        if (m2 != m) store_global(data + ib, yb);
        __syncthreads();  // before the next tile overwrites ta and tb
    }
}

}  // namespace ntt
}  // namespace cuzk



// Pass kernels: (v0, v1, v2, roots, factor_lo, factor_hi, scale_lo, scale_hi, info); gridDim.y
// vectors (at most 3) of 2^log_n elements each; blocks of 128 or 256 threads; dynamic shared
// memory 32·2^(bits+log_lines) bytes. At most 128 registers per thread keep 256 threads' worth
// of blocks twice on every SM (a few words spill); more registers would halve that, and three
// blocks (80 registers, more spills) measured 14–54% slower (docs/perf.md, sixteenth session).
#define CUZK_NTT_PASS(NAME, DIT, ELOG, MIN_BLOCKS)                                                 \
    extern "C" __global__ void __launch_bounds__(256, MIN_BLOCKS)                                  \
        NAME(fr_t* v0, fr_t* v1, fr_t* v2, const fr_t* roots, const fr_t* factor_lo,               \
             const fr_t* factor_hi, const fr_t* scale_lo, const fr_t* scale_hi,                    \
             cuzk::ntt::PassInfo info) {                                                           \
        cuzk::ntt::pass_kernel<DIT, ELOG>(cuzk::ntt::pick(v0, v1, v2), roots, factor_lo,           \
                                          factor_hi, scale_lo, scale_hi, info);                    \
    }
CUZK_NTT_PASS(cuzk_ntt_dif_pass, false, 3, 2)
CUZK_NTT_PASS(cuzk_ntt_dit_pass, true, 3, 2)
// Four elements a thread (plan::Pass::elems_log = 2): about 80 registers, so three blocks of
// 256 threads (24 warps) on every SM instead of two, for twice the shared-memory exchanges.
// Four blocks (64 registers) spill and measured no faster (docs/perf.md, nineteenth session).
// plan::auto_elems_log chooses between the shapes per pass.
CUZK_NTT_PASS(cuzk_ntt_dif_pass4, false, 2, 3)
CUZK_NTT_PASS(cuzk_ntt_dit_pass4, true, 2, 3)
#undef CUZK_NTT_PASS

// Whole transforms of 2 or 4 elements (too short for the pass kernels), one thread per vector,
// with the pass kernels' semantics: DIF takes natural order to bit-reversed and scales after,
// DIT takes bit-reversed to natural and scales before.
extern "C" __global__ void cuzk_ntt_tiny(fr_t* v0, fr_t* v1, fr_t* v2, const fr_t* roots,
                                         const fr_t* scale_lo, const fr_t* scale_hi, cuzk::ntt::PassInfo p) {
    using namespace cuzk::ntt;
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    fr_t* data = pick(v0, v1, v2);
    const uint32_t n = 1u << p.log_n;
    const bool dit = p.flags & FLAG_DIT;
    const bool scaled = p.flags & (FLAG_SCALE_CONST | FLAG_SCALE_POWERS);
    fr_t x[4], y[4];
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = data[i];
        if (dit && scaled) x[i] = mont_mul(x[i], scale_value(i, scale_lo, scale_hi, p));
    }
    for (uint32_t k = 0; k < n; ++k) {
        fr_t acc = cuzk::zero<fr_t>();
        for (uint32_t i = 0; i < n; ++i) {
            // DIF: output position k holds X[rev(k)]; DIT: input position i holds x[rev(i)].
            const uint32_t e = dit ? (rev_bits(i, p.log_n) * k) & (n - 1) : (i * rev_bits(k, p.log_n)) & (n - 1);
            acc = add_mod(acc, mont_mul(x[i], load_table(roots + e)));
        }
        y[k] = acc;
    }
    for (uint32_t k = 0; k < n; ++k) {
        if (!dit && scaled) y[k] = mont_mul(y[k], scale_value(k, scale_lo, scale_hi, p));
        data[k] = y[k];
    }
}

// In-place bit-reversal permutation of 2^log_n elements, element by element (small sizes).
extern "C" __global__ void cuzk_ntt_bitrev(fr_t* v0, fr_t* v1, fr_t* v2, uint32_t log_n) {
    using namespace cuzk::ntt;
    bitrev_small<false>(pick(v0, v1, v2), nullptr, log_n);
}

// In-place bit reversal for log_n >= 8 in 16x16 tiles (bitrev_tiled above). 256 threads.
extern "C" __global__ void __launch_bounds__(256) cuzk_ntt_bitrev_tiled(fr_t* v0, fr_t* v1, fr_t* v2,
                                                                         uint32_t log_n) {
    using namespace cuzk::ntt;
    bitrev_tiled<false>(pick(v0, v1, v2), nullptr, log_n);
}

// The H step's product on coset evaluations: a[i] = a[i]·b[i]. C never reaches the coset: by
// linearity the inverse transform that follows gives coset_iNTT(A·B)/Z, and
// coset_iNTT(coset_NTT(c))/Z = c/Z is subtracted after it (cuzk_ntt_h_finish). The division by
// Z(g·ω^i) = g^n - 1, a constant, is folded into that inverse transform.
extern "C" __global__ void cuzk_ntt_h_product(fr_t* a, const fr_t* b, uint64_t n) {
    using namespace cuzk::ntt;
    for (uint64_t i = cuzk::thread_index(); i < n; i += cuzk::thread_count())
        store_global(a + i, mont_mul(load_global(a + i), load_global(b + i)));
}

// The H step's end, for log_n < 8: a[i] = a[i] - c[i], then a permuted to natural order, in one
// trip through memory. a holds coset_iNTT(A·B)/Z and c holds C's coefficients divided by Z, both
// in bit-reversed order, so the difference is H's coefficients in that order. One block.
extern "C" __global__ void cuzk_ntt_h_finish(fr_t* a, const fr_t* c, uint32_t log_n) {
    cuzk::ntt::bitrev_small<true>(a, c, log_n);
}

// cuzk_ntt_h_finish for log_n >= 8, in the tiles of cuzk_ntt_bitrev_tiled. 256 threads.
extern "C" __global__ void __launch_bounds__(256) cuzk_ntt_h_finish_tiled(fr_t* a, const fr_t* c,
                                                                           uint32_t log_n) {
    cuzk::ntt::bitrev_tiled<true>(a, c, log_n);
}

// Checks and measures the NTT's arithmetic: out[i] = a[i]·b[i] (or a[i]+b[i], a[i]-b[i]) by the
// specialised code (which = 0..2), by the generic field code (which = 3..5), by the lazily
// reduced code of the passes (which = 7..9: a[i] and, for the sum and difference, b[i] below 2r,
// the result reduced at the end), by the lazily reduced product on the FP64 pipe (which = 10,
// fr_f64.cuh; same operand bounds), or (which = 6) a·b by the earlier per-round-fold multiply,
// mont_mul_folded; repeated `iters` times as x ← x∘b[i] so that a timed run is dominated by the
// arithmetic. which = 11..13 run two independent chains of lazily reduced products a thread
// from the same start (11: both on the integer pipes, 12: both on the FP64 pipe, 13: one of
// each), to measure what more independent work a thread, or both pipes at once, give; the two
// results must agree, and a disagreement stores limbs that are no field element. which = 14 is
// which = 10 with b[i] split into the FP64 limbs once, outside the loop.
extern "C" __global__ void cuzk_ntt_arith(fr_t* out, const fr_t* a, const fr_t* b, uint64_t n,
                                          uint32_t which, uint32_t iters) {
    using namespace cuzk::ntt;
    for (uint64_t i = cuzk::thread_index(); i < n; i += cuzk::thread_count()) {
        fr_t x = load_global(a + i);
        const fr_t y = load_global(b + i);
        if (which == 14) {
            // mul_lazy_f64 with b[i] split into limbs once (as a table of limbs would give).
            double w[5];
            cuzk::fr::f64::split(w, y.val);
#pragma unroll 1
            for (uint32_t it = 0; it < iters; ++it) {
                fr_t t;
                cuzk::fr::f64::mul_2r_limbs(t.val, w, x.val);
                x = t;
            }
            store_global(out + i, reduce(x));
            continue;
        }
        if (which >= 11) {
            fr_t z = x;
#pragma unroll 1
            for (uint32_t it = 0; it < iters; ++it) {
                if (which == 11) {
                    x = cuzk::fr::mul_lazy_u32(y, x);
                    z = cuzk::fr::mul_lazy_u32(y, z);
                } else if (which == 12) {
                    x = cuzk::fr::mul_lazy_f64(y, x);
                    z = cuzk::fr::mul_lazy_f64(y, z);
                } else {
                    x = cuzk::fr::mul_lazy_u32(y, x);
                    z = cuzk::fr::mul_lazy_f64(y, z);
                }
            }
            x = reduce(x);
            z = reduce(z);
            uint32_t differ = 0;
#pragma unroll
            for (int l = 0; l < 8; ++l) differ |= x.val[l] ^ z.val[l];
            if (differ != 0) {
#pragma unroll
                for (int l = 0; l < 8; ++l) x.val[l] = 0xffffffffu;
            }
            store_global(out + i, x);
            continue;
        }
#pragma unroll 1
        for (uint32_t it = 0; it < iters; ++it) {
            switch (which) {
                case 0: x = mont_mul(x, y); break;
                case 1: x = add_mod(x, y); break;
                case 2: x = sub_mod(x, y); break;
                case 3: x = cuzk::mul(x, y); break;
                case 4: x = cuzk::add(x, y); break;
                case 5: x = cuzk::sub(x, y); break;
                case 6: x = mont_mul_folded(x, y); break;
                case 7: x = mul_lazy(y, x); break;
                case 8: x = add_2r(x, y); break;
                case 9: x = sub_2r(x, y); break;
                default: x = cuzk::fr::mul_lazy_f64(y, x); break;
            }
        }
        store_global(out + i, which >= 7 ? reduce(x) : x);
    }
}
