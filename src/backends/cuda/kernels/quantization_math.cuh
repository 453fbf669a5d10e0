// The E4M3 or int8 codes a producer writes of its own output (CodesOut, kernel_types.h): the value is
// rounded to the storage type first, so that the codes equal what the quantize kernels compute from the
// stored output.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

__device__ inline std::uint8_t e4m3_code(float stored, float scale) {
  // A true division, as the reference quantizer does: x * (1 / scale) can differ in the last bit.
  return static_cast<std::uint8_t>(
      __nv_cvt_float_to_fp8(__fdiv_rn(stored, scale), __NV_SATFINITE, __NV_E4M3));
}

// e4m3_code() of two values at once, without a division: with `inverse` = RN(1 / scale), the quotient
// q = RN(stored * inverse) is within an ulp of stored / scale, the fused residual stored - q * scale is
// exact, and RN(q + residual * inverse) is the correctly rounded quotient (Markstein's theorem), so the
// codes are e4m3_code()'s bit for bit; one paired conversion makes both (low byte: `stored.x`).
__device__ inline std::uint16_t e4m3_codes2(float2 stored, float scale, float inverse) {
  const auto quotient = [&](float v) {
    const float q = v * inverse;
    return fmaf(fmaf(-q, scale, v), inverse, q);
  };
  return __nv_cvt_float2_to_fp8x2(float2{quotient(stored.x), quotient(stored.y)}, __NV_SATFINITE, __NV_E4M3);
}

// The int8 code of a stored value: x * inverse (inverse = RN(1 / scale), taken once on the host) rounded to
// nearest even and saturated to [-128, 127], NaN made 0: quantize_to_int8 (core/dtype.h) bit for bit.
__device__ inline std::int8_t int8_code(float stored, float inverse) {
  if (isnan(stored)) return 0;
  return static_cast<std::int8_t>(min(max(__float2int_rn(stored * inverse), -128), 127));
}

// Writes V values (f32 results) as type T at y (unless null) and their codes at codes + offset (unless
// codes.codes is null), on the codes' grid.
template <typename T, int V>
__device__ inline void store_with_codes(T* y, const float (&v)[V], const CodesOut& codes,
                                        std::int64_t offset) {
  if (y != nullptr) store<T, V>(y + offset, v);
  if (codes.codes == nullptr) return;
  alignas(8) std::uint8_t c[V];
  if (codes.grid == CodeGrid::kInt8) {
    const float inverse = __frcp_rn(codes.scale);  // RN(1 / scale), as the host quantizer takes it
#pragma unroll
    for (int k = 0; k < V; ++k)
      c[k] = static_cast<std::uint8_t>(int8_code(to_float(from_float<T>(v[k])), inverse));
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) c[k] = e4m3_code(to_float(from_float<T>(v[k])), codes.scale);
  }
  std::uint8_t* out = codes.codes + offset;
  if constexpr (V == 8) {
    *reinterpret_cast<uint2*>(out) = *reinterpret_cast<const uint2*>(c);
  } else if constexpr (V == 4) {
    *reinterpret_cast<std::uint32_t*>(out) = *reinterpret_cast<const std::uint32_t*>(c);
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = c[k];
  }
}

}  // namespace kiln::cuda
