// Rewriting chosen convolutions of an fp32 graph into FP8 or int8 layers, where a real quantized engine
// has its quantization points:
//
//   x --kQuantize(scale_x)--> conv (Precision::kF8) <--kDequantize-- E4M3 codes [O, I, kh, kw], scales [O]
//   x --kQuantize(scale_x, int8)--> conv (Precision::kI8) <--kDequantize-- I8 codes, scales [O]
//
// The weight codes and per-channel scales (amax / 448, or amax / 127 for int8, of the batch-norm-folded
// kernel) are computed here, once; the activation scales come from calibration: one per tensor, or one
// per channel for an int8 tensor only depthwise convolutions read (quant/depthwise_inputs.h).
// Convolutions reading the same tensor share one quantize point, as they share its scales. The bias stays
// f32; an FP8 layer writes fp16, an int8 layer f32 (see graph/precision_assignment.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "quant/activation_scales.h"
#include "quant/quant_format.h"

namespace kiln {

// The tensors the FP8 layers read (one per distinct input), in execution order: what calibration
// must observe.
std::vector<ValueId> fp8_activation_inputs(const Graph& graph, const std::vector<std::string>& layers);

struct Fp8Layer {
  std::string layer;
  std::string activation;  // the tensor its quantize point reads
  float activation_scale = 0.0f;  // per channel: the largest channel's
  bool per_channel_input = false;
  float activation_scale_min = 0.0f;  // per channel: the smallest channel's; else activation_scale
  float weight_scale_min = 0.0f;
  float weight_scale_max = 0.0f;
};

// Rewrites `layers` (names of quantizable convolutions, see quant/layer_selection.h). Each one's input
// tensor needs a scale in `activation_scales` (keyed by value name): in `tensors`, or, int8 only, one per
// channel in `channels`, when every layer of `layers` reading it is depthwise. Weights get one scale per
// output channel, or one for the whole tensor when `per_channel_weights` is false.
std::vector<Fp8Layer> rewrite_to_fp8(Graph& graph, const std::vector<std::string>& layers,
                                     const ActivationScales& activation_scales,
                                     bool per_channel_weights = true,
                                     QuantFormat format = QuantFormat::kE4M3);

// The residual stream in E4M3 (or int8): where every reader of an FP8 (int8) layer's input besides its
// per-tensor quantize point is an add closing a residual connection (its other input a convolution
// without activation that only the add reads, which computes the add in its epilogue), the adds read the
// quantize point too, so that the tensor is held as codes only: an engine's producer then writes 1 byte
// an element instead of 2 + 1 (fp16) or 4 + 1 (f32), and the add reads 1 instead of 2 or 4. The adds see
// the quantized value, as the quantized layers do. Returns the tensors so held.
std::vector<std::string> quantize_residuals(Graph& graph);

}  // namespace kiln
