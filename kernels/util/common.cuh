//! Helpers every kernel file shares: thread indexing for grid-stride loops.
#pragma once

#include <stdint.h>

namespace cuzk {

// Grid-stride loops let the host size grids from the device's SM count instead of the data
// length, so one launch shape serves every input size.
__device__ __forceinline__ uint64_t thread_index() {
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ uint64_t thread_count() {
    return (uint64_t)gridDim.x * blockDim.x;
}

}  // namespace cuzk
