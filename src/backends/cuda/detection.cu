// The detection decode kernel (see detection_kernels.h): one thread per output value, so that neighbouring
// threads write neighbouring values. The four box values of a pixel each recompute the two distances
// they need; with 16 bins that is cheaper than a second pass.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/detection_kernels.h"
#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

// The mean bin of the softmax over `bins` logits.
template <typename T>
__device__ float expected_bin(const T* logits, int bins) {
  float peak = -INFINITY;
  for (int b = 0; b < bins; ++b) peak = fmaxf(peak, to_float(logits[b]));
  float sum = 0.0f, mean = 0.0f;
  for (int b = 0; b < bins; ++b) {
    const float e = expf(to_float(logits[b]) - peak);
    sum += e;
    mean += e * static_cast<float>(b);
  }
  return mean / sum;
}

template <typename T>
__global__ void detect_decode_kernel(const T* x, T* y, DetectShape s) {
  const int out_channels = 4 + s.classes, in_channels = 4 * s.reg_max + s.classes;
  const std::int64_t pixels = static_cast<std::int64_t>(s.h) * s.w;
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= s.n * pixels * out_channels) return;
  const int c = static_cast<int>(i % out_channels);
  const std::int64_t row = i / out_channels;  // image * pixels + pixel
  const int pixel = static_cast<int>(row % pixels);
  const T* in = x + row * in_channels;
  float value;
  if (c >= 4) {
    value = 1.0f / (1.0f + expf(-to_float(in[4 * s.reg_max + c - 4])));
  } else {
    // Values 0 and 2 (centre x, width) span the left and right distances; 1 and 3 the top and bottom.
    const int axis = c % 2;
    const float near = expected_bin(in + axis * s.reg_max, s.reg_max);
    const float far = expected_bin(in + (axis + 2) * s.reg_max, s.reg_max);
    const float centre = static_cast<float>(axis == 0 ? pixel % s.w : pixel / s.w) + 0.5f;
    const float low = centre - near, high = centre + far;
    value = (c < 2 ? (low + high) / 2.0f : high - low) * static_cast<float>(s.stride);
  }
  y[i] = from_float<T>(value);
}

}  // namespace

cudaError_t detect_decode(const void* x, void* y, Elem e, const DetectShape& s, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.h * s.w * (4 + s.classes);
  if (total == 0) return cudaSuccess;
  if (e == Elem::kF32) {
    detect_decode_kernel<float>
        <<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), s);
  } else {
    detect_decode_kernel<__half>
        <<<blocks_for(total), kBlock, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), s);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
