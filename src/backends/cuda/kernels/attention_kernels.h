// The CUDA kernels of the multi-head attention over the pixels of an image (YOLOv10's PSA block), fused:
// scores, softmax and the weighted sum of the values without the score matrix in memory (see
// kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// The widest key_dim + head_dim the kernels hold.
inline constexpr int kAttentionMaxWidth = 160;

// qkv [n, pixels, heads * (2 key_dim + head_dim)], per head its key_dim query channels, key_dim key
// channels and head_dim value channels -> y [n, pixels, heads * head_dim]:
// y = softmax(q k^T * scale) v per head, over all pixels of the image, accumulated in f32.
struct AttentionShape {
  int n, pixels, heads, key_dim, head_dim;
  float scale;
};

// How attention() divides the keys: `splits` ranges of `keys_per_split` keys (the last may be shorter),
// each scored by its own blocks, whose partial softmax sums a second kernel combines. One split when the
// (query tile, head, image) blocks alone fill the GPU.
struct AttentionSplit {
  int splits, keys_per_split;
};
AttentionSplit attention_split(const AttentionShape& shape);

// The f32 partial results attention() keeps in its workspace (0 without a split).
std::size_t attention_workspace_bytes(const AttentionShape& shape);

// The attention: the tensor-core kernel where attention_uses_mma(), else the split-key kernel;
// `workspace` holds attention_workspace_bytes(shape) (may be null when that is 0).
cudaError_t attention(const void* qkv, void* y, void* workspace, Elem e, const AttentionShape& shape,
                      cudaStream_t stream);

// The tensor-core kernel (attention_mma.cu): fp16 with key_dim 32 and head_dim 64 (YOLOv10's PSA) only;
// one block per 64 queries, head and image over all keys; no workspace.
bool attention_mma_fits(Elem e, const AttentionShape& shape);
// Whether attention() takes it: it fits and its blocks fill the GPU.
bool attention_uses_mma(Elem e, const AttentionShape& shape);
cudaError_t attention_mma(const void* qkv, void* y, Elem e, const AttentionShape& shape, cudaStream_t stream);

}  // namespace kiln::cuda
