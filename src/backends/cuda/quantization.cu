// The FP8 kernels (see quantization_kernels.h).
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/quantization_kernels.h"
#include "backends/cuda/quantization_math.cuh"

namespace kiln::cuda {
namespace {

template <typename T>
__global__ void quantize_e4m3_kernel(const T* x, std::uint8_t* y, std::int64_t count, float scale) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  y[i] = e4m3_code(to_float(x[i]), scale);
}

template <typename T>
__global__ void scale_bias_act_kernel(const float* acc, const float* scale, const float* bias,
                                      const T* residual, T* y, std::int64_t count, int channels, Act act,
                                      E4m3Out codes) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const int c = static_cast<int>(i % channels);
  float v = acc[i] * scale[c] + bias[c];
  if (residual != nullptr) v += to_float(residual[i]);
  const float out[1] = {activate(v, act)};
  store_with_codes<T, 1>(y, out, codes, i);
}

}  // namespace

cudaError_t quantize_e4m3(const void* x, Elem e, std::uint8_t* y, std::int64_t count, float scale,
                          cudaStream_t stream) {
  if (e == Elem::kF32) {
    quantize_e4m3_kernel<float>
        <<<blocks_for(count), kBlock, 0, stream>>>(static_cast<const float*>(x), y, count, scale);
  } else {
    quantize_e4m3_kernel<__half>
        <<<blocks_for(count), kBlock, 0, stream>>>(static_cast<const __half*>(x), y, count, scale);
  }
  return cudaGetLastError();
}

cudaError_t scale_bias_act(const float* acc, const float* scale, const float* bias, const void* residual,
                           void* y, Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream,
                           const E4m3Out& codes) {
  const std::int64_t count = rows * channels;
  if (e == Elem::kF32) {
    scale_bias_act_kernel<float>
        <<<blocks_for(count), kBlock, 0, stream>>>(acc, scale, bias, static_cast<const float*>(residual),
                                                   static_cast<float*>(y), count, channels, act, codes);
  } else {
    scale_bias_act_kernel<__half>
        <<<blocks_for(count), kBlock, 0, stream>>>(acc, scale, bias, static_cast<const __half*>(residual),
                                                   static_cast<__half*>(y), count, channels, act, codes);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
