//! Element-wise field kernels over device arrays, for Fr, Fp and Fp2: the GPU side of the
//! field tests against blstrs. Exported names: cuzk_{fr,fp,fp2}_{add,sub,mul,sqr,inv}.
#include "field/bls12_381.cuh"

namespace cuzk {
namespace field_ops {

template <class F>
__device__ __forceinline__ void add_all(F* out, const F* a, const F* b, uint64_t n) {
    for (uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = add(a[i], b[i]);
}
template <class F>
__device__ __forceinline__ void sub_all(F* out, const F* a, const F* b, uint64_t n) {
    for (uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = sub(a[i], b[i]);
}
template <class F>
__device__ __forceinline__ void mul_all(F* out, const F* a, const F* b, uint64_t n) {
    for (uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = mul(a[i], b[i]);
}
template <class F>
__device__ __forceinline__ void sqr_all(F* out, const F* a, uint64_t n) {
    for (uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = sqr(a[i]);
}
template <class F>
__device__ __forceinline__ void inv_all(F* out, const F* a, uint64_t n) {
    for (uint64_t i = thread_index(); i < n; i += thread_count()) out[i] = inv(a[i]);
}

}  // namespace field_ops
}  // namespace cuzk

// The exported ABI: (out, a[, b], n), every array of n elements. `out` may alias an input.
#define CUZK_FIELD_KERNELS(NAME, F)                                                           \
    extern "C" __global__ void cuzk_##NAME##_add(F* out, const F* a, const F* b, uint64_t n) { \
        cuzk::field_ops::add_all(out, a, b, n);                                                \
    }                                                                                          \
    extern "C" __global__ void cuzk_##NAME##_sub(F* out, const F* a, const F* b, uint64_t n) { \
        cuzk::field_ops::sub_all(out, a, b, n);                                                \
    }                                                                                          \
    extern "C" __global__ void cuzk_##NAME##_mul(F* out, const F* a, const F* b, uint64_t n) { \
        cuzk::field_ops::mul_all(out, a, b, n);                                                \
    }                                                                                          \
    extern "C" __global__ void cuzk_##NAME##_sqr(F* out, const F* a, uint64_t n) {             \
        cuzk::field_ops::sqr_all(out, a, n);                                                   \
    }                                                                                          \
    extern "C" __global__ void cuzk_##NAME##_inv(F* out, const F* a, uint64_t n) {             \
        cuzk::field_ops::inv_all(out, a, n);                                                   \
    }

CUZK_FIELD_KERNELS(fr, fr_t)
CUZK_FIELD_KERNELS(fp, fp_t)
CUZK_FIELD_KERNELS(fp2, fp2_t)

#undef CUZK_FIELD_KERNELS
