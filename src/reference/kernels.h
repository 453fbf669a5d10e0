// The CPU reference kernels: one small, obviously correct function per operator, fp32 in and out,
// NCHW, accumulation in double. They are the oracle every faster kernel is tested against and the
// fallback for any operator a backend does not support. Clarity beats speed here.
#pragma once

#include <span>
#include <vector>

#include "core/tensor.h"
#include "graph/attributes.h"
#include "graph/graph.h"

namespace kiln::reference {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias, const ConvAttrs& attrs);
// An int8 convolution as int8 hardware computes it: the products of int8 codes (x_codes holds integer
// values in [-128, 127], or NaN, as f32; weight_codes int8 codes as I8 or f32) summed exactly, the sum
// dequantized by x_scale * weight_scales[oc] in f64 and rounded once to f32, then the f32 epilogue: plus the
// bias in f32, then the activation. x_scales holds one scale, or one per input channel for a depthwise
// convolution (groups == input channels == output channels), whose output channel oc reads input channel
// oc alone and is dequantized by x_scales[oc] * weight_scales[oc].
Tensor conv2d_int8(const Tensor& x_codes, std::span<const float> x_scales, const Tensor& weight_codes,
                   const Tensor& weight_scales, const Tensor* bias, const ConvAttrs& attrs);
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, float epsilon);
Tensor activation(const Tensor& x, Activation activation);
Tensor add(const Tensor& a, const Tensor& b, Activation activation);
Tensor max_pool2d(const Tensor& x, const PoolAttrs& attrs);
Tensor avg_pool2d(const Tensor& x, const PoolAttrs& attrs);
Tensor global_avg_pool(const Tensor& x);
Tensor flatten(const Tensor& x);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias);
Tensor radix_sum(const Tensor& x, const RadixAttrs& attrs);
Tensor radix_softmax(const Tensor& logits, const RadixAttrs& attrs);
Tensor radix_weighted_sum(const Tensor& x, const Tensor& weights, const RadixAttrs& attrs);
// x fake-quantized with attrs.scale to E4M3 (core/dtype.h's fake_quantize_e4m3) or, when attrs.int8, to
// int8 codes (fake_quantize_int8), with channel c (axis 1) on attrs.channel_scales[c] where they are given.
Tensor quantize(const Tensor& x, const QuantizeAttrs& attrs);
// The int8 codes an int8 quantize with `attrs` wrote: x * (1 / scale) rounded, per channel where attrs has
// channel scales (exact for values it wrote); NaN stays NaN.
Tensor int8_codes_of(const Tensor& quantized, const QuantizeAttrs& attrs);
// E4M3 or int8 codes (or their f32 values) times one scale per output channel (axis 0).
Tensor dequantize(const Tensor& codes, const Tensor& scales);
// x [N, C, H, W] times gate [N, C, 1, 1]: every pixel of channel c of image n scaled by gate[n, c].
Tensor channel_scale(const Tensor& x, const Tensor& gate);
// Detection operators (reference/detection.cpp), as attributes.h and op_info.h define them.
Tensor concat(const std::vector<const Tensor*>& inputs, std::int64_t axis);
Tensor channel_slice(const Tensor& x, const SliceAttrs& attrs);
Tensor upsample_nearest(const Tensor& x, std::int64_t scale);
Tensor attention(const Tensor& qkv, const AttentionAttrs& attrs);
Tensor detect_decode(const Tensor& x, const DetectAttrs& attrs);
// reference/detect_select.cpp: select_detections (detect_select.h) as rows x1, y1, x2, y2, score, label.
Tensor detect_select(const Tensor& decoded, const DetectSelectAttrs& attrs);

// Runs `node` on its reference kernel; `inputs` are the node's inputs in order.
Tensor run_op(const Node& node, const std::vector<const Tensor*>& inputs);

// Pooled output extent along one axis, PyTorch's rule (ceil_mode drops a window that would start
// entirely in the bottom/right padding).
std::int64_t pooled_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                           std::int64_t pad_end, bool ceil_mode);

}  // namespace kiln::reference
