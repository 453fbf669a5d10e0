// Squeeze-excite (global pool -> fc1 -> act -> fc2 -> sigmoid -> channel scale) in two launches, at any
// batch, instead of a pool, a gate and a scale launch (fusion.h says when):
//   squeeze_pool:  pooled[n, :] = mean over the pixels of x[n]              (rounded to e)
//                  hidden[n, :] = act1(W1 · pooled[n, :] + b1)              (rounded to e)
//   excite_scale:  gate[n, c]   = act2(W2[c, :] · hidden[n, :] + b2[c])      (rounded to e)
//                  y[n, p, c]   = x[n, p, c] * gate[n, c]
// x NHWC [n, hw, c]; W1 [hidden][c] and W2 [c][hidden] dense and row-major, as [O, I, 1, 1] weights are;
// every vector stored in e, as the unfused layers store them, and every sum in f32 in a fixed order (the
// bits do not depend on how the blocks were scheduled). At a single image, the gate had cost a cluster
// launch of its own, as long as the pool and the scale together on small gates.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// Whether the two launches take a gate of `channels` -> `hidden` -> `out` (out must equal channels):
// up to 4096 channels and 1024 hidden units (EfficientNet-B0..B7: at most 3840 -> 160).
bool squeeze_excite_fits(std::int64_t channels, std::int64_t hidden, std::int64_t out);

struct SqueezeArgs {
  const void* w1 = nullptr;  // [hidden][c]
  const void* b1 = nullptr;  // [hidden]
  void* hidden = nullptr;    // [n, hidden] out
  int units = 0;             // hidden
  Act act = Act::kNone;
};

// Device scratch of squeeze_pool: zeros before the first run (the launch leaves its counters at zero).
std::size_t squeeze_pool_scratch(Elem e, int n, int hw, int c, int units);

// The global pool of x [n, hw, c] and fc1 on it (pooling.cu: the global pool's kernel, whose last block
// per channel slice multiplies its slice into fc1 and whose last such block per image finishes fc1).
cudaError_t squeeze_pool(const void* x, void* scratch, Elem e, int n, int hw, int c, const SqueezeArgs& a,
                         cudaStream_t stream);

struct ExciteArgs {
  const void* hidden = nullptr;  // [n, units]
  const void* w2 = nullptr;      // [c][units]
  const void* b2 = nullptr;      // [c]
  int units = 0;
  Act act = Act::kSigmoid;
};

// fc2 and its activation for the channels each block scales, then y = x * gate; y may alias x.
cudaError_t excite_scale(const void* x, const ExciteArgs& a, void* y, Elem e, int images, std::int64_t pixels,
                         int channels, cudaStream_t stream);

}  // namespace kiln::cuda
