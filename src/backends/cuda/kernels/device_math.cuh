// Scalar helpers shared by kiln's CUDA kernels: f32 <-> storage type conversions (fp16 rounds to
// nearest even, as the CPU backends' fp16 simulation does) and the activations in f32.
#pragma once

#include <cuda_fp16.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

__device__ inline float to_float(float v) { return v; }
__device__ inline float to_float(__half v) { return __half2float(v); }
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

__device__ inline float activate(float v, Act act) {
  switch (act) {
    case Act::kNone:
      return v;
    case Act::kRelu:
      return v > 0.0f ? v : 0.0f;
    case Act::kSilu:
      return v / (1.0f + __expf(-v));
    case Act::kSigmoid:
      return 1.0f / (1.0f + __expf(-v));
  }
  return v;
}

constexpr unsigned kFullWarp = 0xffffffffu;

// The maximum and the sum of v over the 32 lanes of a warp, in every lane; all lanes must take part.
__device__ inline float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, offset));
  return v;
}
__device__ inline float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

}  // namespace kiln::cuda
