// The operators kiln knows and what the verifier, the passes, profiles, the printer and plan files need to
// know about each: the one place an operator is registered. An operator with a reference kernel is added
// in five files:
//   1. here: its OpKind entry and its row in kOpTable (and its attribute struct, if new, in attributes.h);
//   2. graph/shape_inference.cpp: its output shape;
//   3. its kernel in its family's file under reference/ (conv, dense, pooling, ...);
//   4. the kernel's declaration in reference/kernels.h;
//   5. its case in reference/run_op.cpp.
// Shape inference and run_op switch over OpKind without a default case, so the compiler lists 2 and 5.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "graph/attributes.h"

namespace kiln {

class Graph;
struct Node;

enum class OpKind : std::uint8_t {
  kConv2d,            // x, weight [O, I/groups, kh, kw], optional bias [O]
  kBatchNorm,         // x, gamma, beta, running_mean, running_var (per channel)
  kActivation,        // x
  kAdd,               // a, b of equal shape
  kMaxPool2d,         // x
  kAvgPool2d,         // x
  kGlobalAvgPool,     // x [N, C, H, W] -> [N, C, 1, 1]
  kFlatten,           // x [N, C, 1, 1] -> [N, C]
  kLinear,            // x [N, K], weight [M, K], optional bias [M] -> [N, M]
  kRadixSum,          // x [N, R*C, H, W] -> [N, C, H, W], sum over the radix
  kRadixSoftmax,      // logits [N, R*C, 1, 1] -> weights [N, R*C, 1, 1]
  kRadixWeightedSum,  // x [N, R*C, H, W], weights [N, R*C, 1, 1] -> [N, C, H, W]
  // FP8 quantization points (see src/quant/). An FP8 layer reads its activation through a kQuantize and
  // its weight through a kDequantize; backends with FP8 kernels fuse the pair into the layer.
  kQuantize,      // x -> x on the E4M3 grid scaled by a per-tensor scale
  kDequantize,    // codes [O, ...] (E4M3 constant), scales [O] -> codes * scales per output channel
  kChannelScale,  // x [N, C, H, W], gate [N, C, 1, 1] -> x * gate per image and channel (squeeze-excite)
  // Detection (YOLOv10).
  kConcat,        // x0, x1, ... equal but for one axis -> joined along it
  kChannelSlice,  // x [N, C, ...] -> channels [begin, end) of each of `groups` parts
  kUpsample,      // x [N, C, H, W] -> [N, C, H*s, W*s], nearest
  kAttention,     // qkv [N, heads*(2k+d), H, W] -> [N, heads*d, H, W], softmax(q'k/sqrt(k)) v
  kDetectDecode,  // x [N, 4*R + classes, H, W] -> [N, 4 + classes, H*W]: DFL boxes (xywh, pixels), sigmoid
                  // scores
  kDetectSelect,  // decoded [N, 4 + classes, anchors] -> [N, max_det, 6]: per detection the box corners
                  // x1, y1, x2, y2, its score and its class label (as a float), best first (NMS-free top-k)
};

// Which inputs are weights, and must therefore be constants (or, for FP8 layers, a kDequantize of them).
enum class ConstantInputs : std::uint8_t {
  kNone,
  kAllButFirst,  // the first input is the activation
  kAll,
};

// The groups per-layer profiles add kernel time into (kiln bench --profile, kiln study).
inline constexpr std::array<std::string_view, 8> kLayerGroups = {
    "convolution", "split-attention tail", "pooling",       "quantization",
    "attention",   "detection head",       "data movement", "other"};

// Does this node return its (first) input unchanged? eliminate_identity bypasses it when that is safe.
using IdentityRule = bool (*)(const Graph& graph, const Node& node);
// The rules the table uses (op_info.cpp).
bool is_unit_window_pool(const Graph& graph, const Node& node);  // one element per window, no padding
bool is_flatten_of_rank_2(const Graph& graph, const Node& node);
bool is_radix_1_sum(const Graph& graph, const Node& node);
bool is_activation_none(const Graph& graph, const Node& node);

struct OpInfo {
  OpKind op;
  // Stored in plan files: never renamed.
  std::string_view name;
  // The Attributes alternative a node of this operator holds (the verifier checks it).
  std::size_t attributes = kAttributeIndex<std::monostate>;
  ConstantInputs constant_inputs = ConstantInputs::kNone;
  // One of kLayerGroups.
  std::string_view layer_group = "other";
  // nullptr: never an identity.
  IdentityRule computes_identity = nullptr;

  constexpr bool input_must_be_constant(std::size_t index) const {
    return constant_inputs == ConstantInputs::kAll ||
           (constant_inputs == ConstantInputs::kAllButFirst && index >= 1);
  }
};

// One row per operator, in enum order.
inline constexpr std::array kOpTable = {
    OpInfo{.op = OpKind::kConv2d,
           .name = "conv2d",
           .attributes = kAttributeIndex<ConvAttrs>,
           .constant_inputs = ConstantInputs::kAllButFirst,
           .layer_group = "convolution"},
    OpInfo{.op = OpKind::kBatchNorm,
           .name = "batch_norm",
           .attributes = kAttributeIndex<BatchNormAttrs>,
           .constant_inputs = ConstantInputs::kAllButFirst},
    OpInfo{.op = OpKind::kActivation,
           .name = "activation",
           .attributes = kAttributeIndex<ActivationAttrs>,
           .computes_identity = &is_activation_none},
    OpInfo{.op = OpKind::kAdd, .name = "add", .attributes = kAttributeIndex<AddAttrs>},
    // Pools with one element per window, none of it padding: ceil_mode and count_include_pad do not matter.
    OpInfo{.op = OpKind::kMaxPool2d,
           .name = "max_pool2d",
           .attributes = kAttributeIndex<PoolAttrs>,
           .layer_group = "pooling",
           .computes_identity = &is_unit_window_pool},
    OpInfo{.op = OpKind::kAvgPool2d,
           .name = "avg_pool2d",
           .attributes = kAttributeIndex<PoolAttrs>,
           .layer_group = "pooling",
           .computes_identity = &is_unit_window_pool},
    // An identity only on 1x1 maps, which shapes cannot promise.
    OpInfo{.op = OpKind::kGlobalAvgPool, .name = "global_avg_pool", .layer_group = "pooling"},
    OpInfo{.op = OpKind::kFlatten, .name = "flatten", .computes_identity = &is_flatten_of_rank_2},
    OpInfo{.op = OpKind::kLinear, .name = "linear", .constant_inputs = ConstantInputs::kAllButFirst},
    OpInfo{.op = OpKind::kRadixSum,
           .name = "radix_sum",
           .attributes = kAttributeIndex<RadixAttrs>,
           .layer_group = "split-attention tail",
           .computes_identity = &is_radix_1_sum},
    // Radix 1 is a sigmoid, not an identity.
    OpInfo{.op = OpKind::kRadixSoftmax,
           .name = "radix_softmax",
           .attributes = kAttributeIndex<RadixAttrs>,
           .layer_group = "split-attention tail"},
    // Radix 1 still multiplies by the weights.
    OpInfo{.op = OpKind::kRadixWeightedSum,
           .name = "radix_weighted_sum",
           .attributes = kAttributeIndex<RadixAttrs>,
           .layer_group = "split-attention tail"},
    OpInfo{.op = OpKind::kQuantize,
           .name = "quantize",
           .attributes = kAttributeIndex<QuantizeAttrs>,
           .layer_group = "quantization"},
    // Weights only: activations are quantized per tensor by kQuantize.
    OpInfo{.op = OpKind::kDequantize,
           .name = "dequantize",
           .constant_inputs = ConstantInputs::kAll,
           .layer_group = "quantization"},
    OpInfo{.op = OpKind::kChannelScale, .name = "channel_scale"},  // the gate is data
    // A single input is kept: backends need not support a copy of one.
    OpInfo{.op = OpKind::kConcat,
           .name = "concat",
           .attributes = kAttributeIndex<ConcatAttrs>,
           .layer_group = "data movement"},
    OpInfo{.op = OpKind::kChannelSlice,
           .name = "channel_slice",
           .attributes = kAttributeIndex<SliceAttrs>,
           .layer_group = "data movement"},
    OpInfo{.op = OpKind::kUpsample,
           .name = "upsample",
           .attributes = kAttributeIndex<UpsampleAttrs>,
           .layer_group = "data movement"},
    OpInfo{.op = OpKind::kAttention,
           .name = "attention",
           .attributes = kAttributeIndex<AttentionAttrs>,
           .layer_group = "attention"},
    OpInfo{.op = OpKind::kDetectDecode,
           .name = "detect_decode",
           .attributes = kAttributeIndex<DetectAttrs>,
           .layer_group = "detection head"},
    OpInfo{.op = OpKind::kDetectSelect,
           .name = "detect_select",
           .attributes = kAttributeIndex<DetectSelectAttrs>,
           .layer_group = "detection head"},
};

inline constexpr int kOpKindCount = static_cast<int>(kOpTable.size());

namespace detail {
constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kOpTable.size(); ++i) {
    if (static_cast<std::size_t>(kOpTable[i].op) != i) return false;
  }
  return true;
}
}  // namespace detail
static_assert(detail::rows_in_enum_order(), "kOpTable: row i must describe OpKind i");

// The operator's row. Fails (kiln::Error) for an OpKind without one: an enum entry added at the end
// without its row in kOpTable.
const OpInfo& op_info(OpKind op);

std::string_view op_kind_name(OpKind op);  // "unknown" for a value without a row
std::optional<OpKind> op_kind_from_name(std::string_view name);

}  // namespace kiln
