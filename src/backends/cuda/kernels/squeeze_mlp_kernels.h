// The two 1x1 convolutions of an attention gate on a pooled vector (ResNeSt's split-attention fc1 and
// fc2, squeeze-excite's conv_reduce and conv_expand) in one launch instead of two cuDNN calls that each
// cost more in launch than in arithmetic, optionally with the global average pool that feeds fc1:
//   p[n, :] = mean over the hw pixels of (sum over the radix of x[n, pixel, r * in + :])  (rounded to e)
//   y[n, :] = act2(W2 · act1(W1 · p[n, :] + b1) + b2)
// x [n, hw, radix * in] (hw 1, radix 1: x is the pooled vector itself), W1 [hidden, in / groups1],
// W2 [out, hidden / groups2] (row-major, grouped as convolutions group), b1 [hidden], b2 [out],
// y [n, out], all of element type e, accumulated in f32. The pooled and the hidden vector are rounded to
// e, as the unfused layers store them. Deterministic: every sum runs in a fixed order (no atomics).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

struct GateShape {
  int n = 1;
  int in = 0, hidden = 0, out = 0;
  int groups1 = 1, groups2 = 1;
  int hw = 1, radix = 1;  // the pool computed in the launch (hw 1, radix 1: none)
  int cluster = 16;       // thread blocks per image (gate_cluster_size)
};

// Whether squeeze_mlp takes these sizes: up to 4096 inputs and 1024 hidden units, any output count, so
// every gate of ResNeSt-50d..269e (at most 512 -> 256 -> 1024) and EfficientNet-B0..B7 (at most
// 2304 -> 96 -> 2304) fits.
bool squeeze_mlp_fits(int in, int hidden, int out, int groups1, int groups2);

// Whether the launch should also compute the global pool of `channels` x `radix` channels over `hw`
// pixels of `elem_bytes` each, rather than leave it to a pool launch of its own (see squeeze_mlp.cu).
bool squeeze_mlp_pools_fast(std::int64_t hw, std::int64_t radix, std::int64_t channels,
                            std::size_t elem_bytes);

// The cluster size this device runs the gate with for n images: 16 where a cluster of 16 blocks can be
// resident and n clusters of 16 fit in one wave, else 8 (the portable size). Sets the kernels'
// attributes: call it before capturing a launch.
int gate_cluster_size(Elem e, int n);

// act2 kNone: the attention gate's logits (ResNeSt); kSigmoid: squeeze-excite's gate.
cudaError_t squeeze_mlp(const void* x, const void* w1, const void* b1, Act act1, const void* w2,
                        const void* b2, Act act2, void* y, Elem e, const GateShape& s, cudaStream_t stream);

}  // namespace kiln::cuda
