// Split attention (ResNeSt) on channel-blocked layouts (layout.h). A radix tensor's channels are laid
// out [radix][C]; when C is a multiple of the block, each radix split is a run of whole channel blocks,
// so the kernels stream contiguous memory and vectorize across the block. Semantics follow the
// reference kernels (reference/split_attention.cpp).
#pragma once

#include "backends/cpu/onednn/layout.h"
#include "graph/attributes.h"

namespace kiln::onednn {

// The kernels keep one pointer per radix split on the stack.
inline constexpr std::int64_t kMaxRadix = 8;

// Whether the kernels below handle a radix tensor in layout `x` (splits made of whole blocks).
bool radix_layout_supported(const ChannelBlocked& x, std::int64_t radix);

// y[n, c] = sum_r x[n, r * C + c]; y has x's block and C channels.
void radix_sum(const float* x, const ChannelBlocked& x_layout, std::int64_t radix, float* y);
// y[n, c] = mean over pixels of sum_r x[n, r * C + c]: radix_sum then global average pooling in one
// pass. y is [N, C] with `y_stride` floats per image; padding channels are set to zero.
void radix_sum_mean(const float* x, const ChannelBlocked& x_layout, std::int64_t radix, float* y,
                    std::int64_t y_stride);
// weights [N, R * C] (per-image stride `w_stride`) to y[n, c] = sum_r x[n, r * C + c] * w[n, r * C + c].
void radix_weighted_sum(const float* x, const ChannelBlocked& x_layout, std::int64_t radix, const float* w,
                        std::int64_t w_stride, float* y);
// Softmax across the radix of fc2's logits [N, total] (per-image strides in and out), reordering
// [cardinality][radix][C'] to [radix][cardinality][C']; a sigmoid when radix is 1. Output padding
// channels (total .. out_stride) are set to zero.
void radix_softmax(const float* logits, std::int64_t in_stride, std::int64_t batch, std::int64_t total,
                   std::int64_t radix, std::int64_t cardinality, float* out, std::int64_t out_stride);

}  // namespace kiln::onednn
