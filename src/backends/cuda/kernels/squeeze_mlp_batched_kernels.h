// The attention gate's launch for batches above one (squeeze_mlp_kernels.h has the one for a single image):
// the two 1x1 convolutions of the gate on an already pooled vector, one cluster of 8 blocks per image. With
// many images it beats squeeze_mlp_kernels.h's launch (whose per-image clusters then queue); with one image
// squeeze_mlp_kernels.h's is faster and also computes the pool (docs/log/PERFORMANCE_LOG.md has the figures):
//   y[n, :] = act2(W2 · act1(W1 · x[n, :] + b1) + b2)
// x [n, in], W1 [hidden, in], W2 [out, hidden] (row-major), b1 [hidden], b2 [out], y [n, out], all of
// element type e, accumulated in f32; the hidden vector is rounded to e, as the unfused layers store it.
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// Whether squeeze_mlp_batched takes these sizes and beats two cuDNN launches on them. Its 8 blocks read the
// weights at a fraction of the chip's bandwidth: measured, small gates beat the two convolutions, gates of
// about 24k weights tie, and larger ones lose, so gates above 32k weights stay on cuDNN.
bool squeeze_mlp_batched_fits(int in, int hidden, int out);

// act2 kNone: the attention gate's logits (ResNeSt); kSigmoid: squeeze-excite's gate.
cudaError_t squeeze_mlp_batched(const void* x, const void* w1, const void* b1, Act act1, const void* w2,
                                const void* b2, Act act2, void* y, Elem e, int n, int in, int hidden, int out,
                                cudaStream_t stream);

}  // namespace kiln::cuda
