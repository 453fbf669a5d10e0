// The CUDA kernel of the multi-head attention over the pixels of an image (YOLOv10's PSA block), fused:
// scores, softmax and the weighted sum of the values in one launch (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include "backends/cuda/kernel_types.h"

namespace kiln::cuda {

// The widest key_dim + head_dim the kernel's shared memory holds.
inline constexpr int kAttentionMaxWidth = 160;

// qkv [n, pixels, heads * (2 key_dim + head_dim)], per head its key_dim query channels, key_dim key
// channels and head_dim value channels -> y [n, pixels, heads * head_dim]:
// y = softmax(q k^T * scale) v per head, over all pixels of the image, accumulated in f32.
struct AttentionShape {
  int n, pixels, heads, key_dim, head_dim;
  float scale;
};
cudaError_t attention(const void* qkv, void* y, Elem e, const AttentionShape& shape, cudaStream_t stream);

}  // namespace kiln::cuda
