// Split attention (ResNeSt) on channel layouts (layout.h). A radix tensor's channels are laid out
// [radix][C]. In NHWC each split is a run of C channels of every pixel; in NCHW / nChw16c, when C is a
// multiple of the block, each split is a run of whole channel blocks. Either way the kernels stream
// contiguous memory and vectorize across channels. Semantics follow the reference kernels
// (reference/split_attention.cpp).
#pragma once

#include "backends/cpu/onednn/layout.h"
#include "graph/attributes.h"

namespace kiln::onednn {

// The kernels keep one pointer per radix split on the stack.
inline constexpr std::int64_t kMaxRadix = 8;

// Whether the kernels below handle a radix tensor in layout `x`.
bool radix_layout_supported(const ChannelLayout& x, std::int64_t radix);

// Whether the kernels can write their [N, C, H, W] result for input layout `x` in layout `y`: x's own
// layout, or NHWC.
bool radix_output_supported(const ChannelLayout& x, const ChannelLayout& y);

// A feature map the kernels read or write: f32 elements, or bf16 ones (a value stored in bf16 by a bf16
// convolution, or read by one: precision.h). They compute in f32 either way, widening bf16 exactly, and
// round a bf16 result once, to nearest even, as writing f32 and rounding it would.
struct RadixInput {
  const void* data;
  bool bf16 = false;
};
struct RadixOutput {
  void* data;
  bool bf16 = false;
};
// A step's buffer as the kernels take it; called when the step runs, once the workspace has bound it.
inline RadixInput radix_in(const dnnl::memory& m) {
  return {m.get_data_handle(), m.get_desc().data_type() == dnnl::memory::data_type::bf16};
}
inline RadixOutput radix_out(const dnnl::memory& m) {
  return {m.get_data_handle(), m.get_desc().data_type() == dnnl::memory::data_type::bf16};
}

// y[n, c] = sum_r x[n, r * C + c].
void radix_sum(RadixInput x, const ChannelLayout& x_layout, std::int64_t radix, RadixOutput y,
               const ChannelLayout& y_layout);
// y[n, c] = mean over pixels of sum_r x[n, r * C + c]: radix_sum then global average pooling in one
// pass. y is [N, C] with `y_stride` elements per image; channels C .. y_stride are set to zero.
void radix_sum_mean(RadixInput x, const ChannelLayout& x_layout, std::int64_t radix, RadixOutput y,
                    std::int64_t y_stride);
// y[n, c] = sum_r x[n, r * C + c] * w[n, r * C + c] with weights [N, R * C] (`w_stride` floats per
// image).
void radix_weighted_sum(RadixInput x, const ChannelLayout& x_layout, std::int64_t radix, const float* w,
                        std::int64_t w_stride, RadixOutput y, const ChannelLayout& y_layout);
// Softmax across the radix of fc2's logits [N, total] (per-image strides in and out), reordering
// [cardinality][radix][C'] to [radix][cardinality][C']; a sigmoid when radix is 1. Output padding
// channels (total .. out_stride) are set to zero.
void radix_softmax(const float* logits, std::int64_t in_stride, std::int64_t batch, std::int64_t total,
                   std::int64_t radix, std::int64_t cardinality, float* out, std::int64_t out_stride);

}  // namespace kiln::onednn
