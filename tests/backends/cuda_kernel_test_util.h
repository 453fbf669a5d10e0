// Helpers for tests that call kiln's CUDA kernels directly: layout changes between the reference's
// [N, C, H, W] and the kernels' [N, H, W, C], values as a program of a precision holds them, uploads.
#pragma once

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_util.h"
#include "core/tensor.h"

namespace kiln::testing {

// [N, C, H, W] -> [N, H, W, C] (to_nchw: back).
inline Tensor to_nhwc(const Tensor& x) {
  const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y(DType::kF32, {n, h, w, c});
  for (std::int64_t i = 0; i < n * c * h * w; ++i) {
    const std::int64_t col = i % w, row = i / w % h, ch = i / (w * h) % c, image = i / (w * h * c);
    y.mutable_f32()[static_cast<std::size_t>(((image * h + row) * w + col) * c + ch)] =
        x.f32()[static_cast<std::size_t>(i)];
  }
  return y;
}

inline Tensor to_nchw(const Tensor& y) {
  const std::int64_t n = y.dim(0), h = y.dim(1), w = y.dim(2), c = y.dim(3);
  Tensor x(DType::kF32, {n, c, h, w});
  for (std::int64_t i = 0; i < n * c * h * w; ++i) {
    const std::int64_t col = i % w, row = i / w % h, ch = i / (w * h) % c, image = i / (w * h * c);
    x.mutable_f32()[static_cast<std::size_t>(i)] =
        y.f32()[static_cast<std::size_t>(((image * h + row) * w + col) * c + ch)];
  }
  return x;
}

// The values as a program of that precision holds them (fp16: rounded once).
inline Tensor held(const Tensor& t, bool fp16) { return fp16 ? t.to(DType::kF16).to(DType::kF32) : t; }

inline cuda::DeviceBuffer on_device(const Tensor& t, bool fp16) {
  const Tensor stored = fp16 ? t.to(DType::kF16) : t;
  cuda::DeviceBuffer buffer(stored.nbytes());
  cuda::check(cudaMemcpy(buffer.data(), stored.bytes(), stored.nbytes(), cudaMemcpyHostToDevice), "upload");
  return buffer;
}

// The tensor of `dtype` and `shape` a kernel wrote to `buffer`, as f32.
inline Tensor from_device(const cuda::DeviceBuffer& buffer, DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  cuda::check(cudaMemcpy(t.mutable_bytes(), buffer.data(), t.nbytes(), cudaMemcpyDeviceToHost), "download");
  return t.to(DType::kF32);
}

}  // namespace kiln::testing
#endif  // KILN_HAVE_CUDA
