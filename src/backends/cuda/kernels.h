// kiln's own CUDA kernels: everything the CUDA backend runs besides cuDNN's convolutions. Tensors are
// NHWC (channels innermost), stored as f32 or fp16; fp16 kernels accumulate in f32. Every launcher is
// asynchronous on `stream` and returns the launch error (cudaSuccess when the launch was accepted).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace kiln::cuda {

enum class Elem : std::uint8_t { kF32, kF16 };
inline std::size_t elem_bytes(Elem e) { return e == Elem::kF32 ? 4 : 2; }

// Activations kernels apply after an add, a bias or on their own (kiln::Activation's values).
enum class Act : std::uint8_t { kNone, kRelu, kSilu, kSigmoid };

// Fills `count` elements with a fixed pseudo-random pattern in [-1, 1] (tactic timing never runs on zeros).
cudaError_t fill_pattern(void* x, Elem e, std::int64_t count, cudaStream_t stream);

// x f32 NCHW [n, c, hw] -> y NHWC [n, hw, c]; and back.
cudaError_t nchw_f32_to_nhwc(const float* x, void* y, Elem e, int n, int c, int hw, cudaStream_t stream);
cudaError_t nhwc_to_nchw_f32(const void* x, Elem e, float* y, int n, int c, int hw, cudaStream_t stream);

// y = act(a + b (+ bias per channel)) over rows x channels; b and bias may be null; y may alias a.
cudaError_t add_bias_act(const void* a, const void* b, const void* bias, void* y, Elem e, std::int64_t rows,
                         int channels, Act act, cudaStream_t stream);

// y = x * scale[c] + shift[c] (an unfolded batch norm; scale and shift are f32).
cudaError_t scale_shift(const void* x, const float* scale, const float* shift, void* y, Elem e,
                        std::int64_t rows, int channels, cudaStream_t stream);

struct PoolShape {
  int n, c, in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w;
  int pad_top, pad_left, pad_bottom, pad_right;
  bool count_include_pad;
};
cudaError_t max_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream);
cudaError_t avg_pool(const void* x, void* y, Elem e, const PoolShape& shape, cudaStream_t stream);

// Global average pool of the radix sum: x [n, hw, radix * c] -> y [n, c] (radix 1: a plain global pool).
// `partial` is an f32 scratch of 2 * n * c values that must hold zeros (sums, then block counters);
// the kernel leaves it zeroed again.
cudaError_t radix_global_pool(const void* x, void* y, float* partial, Elem e, int n, int hw, int radix, int c,
                              cudaStream_t stream);

// x [rows, radix * c] -> y [rows, c], the sum over the radix.
cudaError_t radix_sum(const void* x, void* y, Elem e, std::int64_t rows, int radix, int c,
                      cudaStream_t stream);

// logits [n, cardinality][radix][c / cardinality] -> weights [n, radix][c] (softmax over the radix;
// sigmoid when radix is 1).
cudaError_t radix_softmax(const void* logits, void* weights, Elem e, int n, int radix, int cardinality, int c,
                          cudaStream_t stream);

// y[n, hw, c] = sum_r x[n, hw, r * c + ch] * w(n, r, ch), where w is either a weights tensor laid out
// [n, radix][c] (`from_logits` false) or the softmax of fc2's logits, computed on the fly (true).
cudaError_t radix_weighted_sum(const void* x, const void* w, void* y, Elem e, int n, int hw, int radix,
                               int cardinality, int c, bool from_logits, cudaStream_t stream);

// FP8 E4M3 codes of x / scale (round to nearest even, saturating at +-448), as an FP8 layer reads its
// input: y holds `count` bytes.
cudaError_t quantize_e4m3(const void* x, Elem e, std::uint8_t* y, std::int64_t count, float scale,
                          cudaStream_t stream);

// The epilogue of an FP8 convolution cuDNN could not fuse: y = act(acc * scale[c] + bias[c] (+ residual)),
// from its f32 accumulator (acc, rows x channels) to y of type e; scale and bias are f32, residual
// (type e) may be null.
cudaError_t scale_bias_act(const float* acc, const float* scale, const float* bias, const void* residual, void* y,
                           Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream);

}  // namespace kiln::cuda
