// A convolution's geometry and buffers as every way of running it takes them (cuDNN, cuBLASLt, kiln's
// kernels). A linear layer is a 1x1 convolution over n rows.
#pragma once

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct ConvGeometry {
  int n = 1, c = 1, h = 1, w = 1;  // input
  int k = 1, r = 1, s = 1;         // output channels, kernel extents
  int out_h = 1, out_w = 1;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  // Elements between neighbouring pixels of x, y and the residual where they are channel views into a
  // wider NHWC tensor (a concat's output written in place, a slice read in place: channel_views.h); 0 for
  // a packed tensor (c, k and k). Only cuDNN's graph API with its epilogue fused and kiln's mma and
  // Hopper kernels take views.
  int x_pitch = 0, y_pitch = 0, residual_pitch = 0;
  bool packed() const { return x_pitch == 0 && y_pitch == 0 && residual_pitch == 0; }
};

// The buffers one convolution reads and writes (residual may be null).
struct ConvBuffers {
  const void* x = nullptr;
  const void* weight = nullptr;  // [k, r, s, c / groups]
  const void* bias = nullptr;    // [k]
  const void* residual = nullptr;
  // > 0: `residual` holds the codes of a quantize point of this scale (a quantized plan's residual stream
  // stored as codes only): E4M3 ones, or int8 ones where `residual_int8` is set. Only kiln's Hopper kernel
  // reads them.
  float residual_codes_scale = 0.0f;
  bool residual_int8 = false;
  void* y = nullptr;
  // FP8 layers (CudnnGraphConv with fp8): x and weight hold E4M3 codes, bias is f32, `scale` the f32
  // per-output-channel product of the input's and the weights' scales, and `accumulator` an f32 scratch
  // of [n * out_h * out_w, k] for when the epilogue runs in kiln's kernel instead of cuDNN's.
  const float* scale = nullptr;
  float* accumulator = nullptr;
  // CudnnGraphConv made with `codes`: its epilogue kernel also writes y's E4M3 codes (quantize_fusion.h);
  // an FP8 or int8 layer's y may then be null. int8 codes (their grid) only kiln's Hopper kernel writes.
  CodesOut codes;
  bool int8_codes() const { return codes.codes != nullptr && codes.grid == CodeGrid::kInt8; }
};

}  // namespace kiln::cuda
