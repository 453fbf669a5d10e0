// The FP8 kernels (see quantization_kernels.h).
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/quantization_kernels.h"

namespace kiln::cuda {
namespace {

template <typename T>
__global__ void quantize_e4m3_kernel(const T* x, std::uint8_t* y, std::int64_t count, float scale) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  // A true division, as the reference quantizer does: x * (1 / scale) can differ in the last bit.
  y[i] = static_cast<std::uint8_t>(
      __nv_cvt_float_to_fp8(__fdiv_rn(to_float(x[i]), scale), __NV_SATFINITE, __NV_E4M3));
}

template <typename T>
__global__ void scale_bias_act_kernel(const float* acc, const float* scale, const float* bias,
                                      const T* residual, T* y, std::int64_t count, int channels, Act act) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const int c = static_cast<int>(i % channels);
  float v = acc[i] * scale[c] + bias[c];
  if (residual != nullptr) v += to_float(residual[i]);
  y[i] = from_float<T>(activate(v, act));
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
                           void* y, Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream) {
  const std::int64_t count = rows * channels;
  if (e == Elem::kF32) {
    scale_bias_act_kernel<float><<<blocks_for(count), kBlock, 0, stream>>>(
        acc, scale, bias, static_cast<const float*>(residual), static_cast<float*>(y), count, channels, act);
  } else {
    scale_bias_act_kernel<__half>
        <<<blocks_for(count), kBlock, 0, stream>>>(acc, scale, bias, static_cast<const __half*>(residual),
                                                   static_cast<__half*>(y), count, channels, act);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
