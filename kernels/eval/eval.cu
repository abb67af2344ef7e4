//! A circuit's a = A·w, b = B·w, c = C·w on the device, from its PCE (crates/cuzk-synth's
//! `Csr`: row pointers, a column and a coefficient-table index per entry, the table of
//! distinct coefficients), with the satisfiability check a·b = c in the same pass; and the
//! gather of the MSM scalars a density bitmap selects; and the unpacking of a witness that
//! crossed PCIe packed (a bit per value for "is one", a bit for "is other", the others
//! whole). The host models are crates/cuzk-synth/src/pce/eval.rs (`product_row`,
//! `satisfied`) and crates/cuzk-prover/src/pack.rs (`Packed::new`): keep them in step.
//! Launched by crates/cuzk-cuda/src/sparse.rs and packed.rs. Exported names: cuzk_eval_*.
#include "field/fr_arith.cuh"
#include "util/common.cuh"

namespace cuzk {
namespace eval {

// Table indices of ONE and -ONE, present in every table (`Csr::ONE_INDEX`, `MINUS_ONE_INDEX`).
constexpr uint32_t ONE_INDEX = 0;
constexpr uint32_t MINUS_ONE_INDEX = 1;

// Witness values and table entries are read-only for the kernel's life.
__device__ __forceinline__ fr_t load(const fr_t* p) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
    const uint4 x = __ldg(q), y = __ldg(q + 1);
    fr_t r;
    r.val[0] = x.x; r.val[1] = x.y; r.val[2] = x.z; r.val[3] = x.w;
    r.val[4] = y.x; r.val[5] = y.y; r.val[6] = y.z; r.val[7] = y.w;
    return r;
}

__device__ __forceinline__ void store(fr_t* p, const fr_t& v) {
    uint4* q = reinterpret_cast<uint4*>(p);
    q[0] = make_uint4(v.val[0], v.val[1], v.val[2], v.val[3]);
    q[1] = make_uint4(v.val[4], v.val[5], v.val[6], v.val[7]);
}

__device__ __forceinline__ bool same(const fr_t& x, const fr_t& y) {
    uint32_t d = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) d |= x.val[i] ^ y.val[i];
    return d == 0;
}

__device__ __forceinline__ bool is_zero_value(const fr_t& x) {
    uint32_t d = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) d |= x.val[i];
    return d == 0;
}

// One CSR matrix as the kernels read it.
struct Csr {
    const uint32_t* row_ptr;  // rows + 1 entries, each at most the entry count
    const uint32_t* cols;     // column of each entry: inputs first, then aux
    const uint32_t* coeffs;   // coefficient of each entry, as an index into `table`
    const fr_t* table;        // the distinct coefficients, ONE and -ONE first
};

// The witness as one vector: column k < num_inputs is an input, the rest aux.
struct Columns {
    const fr_t* inputs;
    const fr_t* aux;
    uint32_t num_inputs;

    __device__ __forceinline__ fr_t get(uint32_t col) const {
        return col < num_inputs ? load(inputs + col) : load(aux + (col - num_inputs));
    }
};

// Row r of m·w. Coefficients ±1 are an addition or a subtraction; others multiply unless the
// value is 0 or 1 (most values of real circuits are bits), as the host evaluator does.
__device__ __forceinline__ fr_t product_row(const Csr& m, const Columns& w, uint64_t r,
                                            const fr_t& one) {
    fr_t acc = zero<fr_t>();
    const uint32_t end = __ldg(m.row_ptr + r + 1);
    for (uint32_t k = __ldg(m.row_ptr + r); k < end; ++k) {
        const fr_t x = w.get(__ldg(m.cols + k));
        const uint32_t ci = __ldg(m.coeffs + k);
        if (ci == ONE_INDEX) {
            acc = fr::add_mod(acc, x);
        } else if (ci == MINUS_ONE_INDEX) {
            acc = fr::sub_mod(acc, x);
        } else if (!is_zero_value(x)) {
            const fr_t coeff = load(m.table + ci);
            acc = fr::add_mod(acc, same(x, one) ? coeff : fr::mont_mul(x, coeff));
        }
    }
    return acc;
}

// Whether x·y = z, without the multiplication when a factor is 0 or 1.
__device__ __forceinline__ bool satisfied(const fr_t& x, const fr_t& y, const fr_t& z,
                                          const fr_t& one) {
    if (is_zero_value(x) || is_zero_value(y)) return is_zero_value(z);
    if (same(x, one)) return same(y, z);
    if (same(y, one)) return same(x, z);
    return same(fr::mont_mul(x, y), z);
}

}  // namespace eval
}  // namespace cuzk

// a, b, c over a domain of n >= rows elements: rows 0..rows are the products, the rest zero.
// Every row whose a·b differs from c lowers *first_failing to its index (the caller sets it
// to 0xffffffff first). Grid-stride over the domain, one row per thread.
extern "C" __global__ void __launch_bounds__(256) cuzk_eval_abc(
    fr_t* a, fr_t* b, fr_t* c, uint32_t* first_failing,
    const uint32_t* a_row_ptr, const uint32_t* a_cols, const uint32_t* a_coeffs, const fr_t* a_table,
    const uint32_t* b_row_ptr, const uint32_t* b_cols, const uint32_t* b_coeffs, const fr_t* b_table,
    const uint32_t* c_row_ptr, const uint32_t* c_cols, const uint32_t* c_coeffs, const fr_t* c_table,
    const fr_t* inputs, const fr_t* aux, uint32_t num_inputs, uint64_t rows, uint64_t n) {
    using namespace cuzk::eval;
    const Csr ma{a_row_ptr, a_cols, a_coeffs, a_table};
    const Csr mb{b_row_ptr, b_cols, b_coeffs, b_table};
    const Csr mc{c_row_ptr, c_cols, c_coeffs, c_table};
    const Columns w{inputs, aux, num_inputs};
    const fr_t one = cuzk::one<fr_t>();
    for (uint64_t r = cuzk::thread_index(); r < n; r += cuzk::thread_count()) {
        if (r >= rows) {
            const fr_t z = cuzk::zero<fr_t>();
            store(a + r, z);
            store(b + r, z);
            store(c + r, z);
            continue;
        }
        const fr_t x = product_row(ma, w, r, one);
        const fr_t y = product_row(mb, w, r, one);
        const fr_t z = product_row(mc, w, r, one);
        if (!satisfied(x, y, z, one)) atomicMin(first_failing, (uint32_t)r);
        store(a + r, x);
        store(b + r, y);
        store(c + r, z);
    }
}

// out[offsets[i / 64] + (set bits of words[i / 64] below bit i % 64)] = src[i] for every i < len
// whose bit is set: the elements a bitmap selects, in order. `offsets` holds the set bits of
// the words before each word. One element per thread, so reads of `src` are coalesced and
// neighbouring selected elements are written side by side.
extern "C" __global__ void __launch_bounds__(256) cuzk_eval_gather(
    fr_t* out, const fr_t* src, const uint64_t* words, const uint32_t* offsets, uint64_t len) {
    using namespace cuzk::eval;
    for (uint64_t i = cuzk::thread_index(); i < len; i += cuzk::thread_count()) {
        const uint64_t word = __ldg(words + (i >> 6));
        const uint32_t bit = (uint32_t)(i & 63);
        if (!((word >> bit) & 1)) continue;
        const uint64_t below = word & ((1ull << bit) - 1);
        const uint64_t at = (uint64_t)__ldg(offsets + (i >> 6)) + (uint64_t)__popcll(below);
        store(out + at, load(src + i));
    }
}

// out[i] for every i < len from a packed witness: values[offsets[i / 64] + (set bits of
// others[i / 64] below bit i % 64)] where bit i of `others` is set, else ONE where bit i of
// `ones` is set, else zero. `offsets` holds the set bits of `others` before each word; the
// caller checks that they are consistent and stay below the length of `values`. One element
// per thread, so the writes of `out` are coalesced.
extern "C" __global__ void __launch_bounds__(256) cuzk_eval_unpack(
    fr_t* out, const uint64_t* ones, const uint64_t* others, const uint32_t* offsets,
    const fr_t* values, uint64_t len) {
    using namespace cuzk::eval;
    const fr_t one = cuzk::one<fr_t>();
    const fr_t zero = cuzk::zero<fr_t>();
    for (uint64_t i = cuzk::thread_index(); i < len; i += cuzk::thread_count()) {
        const uint64_t w = i >> 6;
        const uint32_t bit = (uint32_t)(i & 63);
        const uint64_t other = __ldg(others + w);
        if ((other >> bit) & 1) {
            const uint64_t below = other & ((1ull << bit) - 1);
            const uint64_t at = (uint64_t)__ldg(offsets + w) + (uint64_t)__popcll(below);
            store(out + i, load(values + at));
        } else {
            store(out + i, ((__ldg(ones + w) >> bit) & 1) ? one : zero);
        }
    }
}
