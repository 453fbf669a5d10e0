#include "graph/op_kind.h"

#include <array>

namespace kiln {

std::string_view op_kind_name(OpKind op) {
  switch (op) {
    case OpKind::kConv2d:
      return "conv2d";
    case OpKind::kBatchNorm:
      return "batch_norm";
    case OpKind::kActivation:
      return "activation";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMaxPool2d:
      return "max_pool2d";
    case OpKind::kAvgPool2d:
      return "avg_pool2d";
    case OpKind::kGlobalAvgPool:
      return "global_avg_pool";
    case OpKind::kFlatten:
      return "flatten";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kRadixSum:
      return "radix_sum";
    case OpKind::kRadixSoftmax:
      return "radix_softmax";
    case OpKind::kRadixWeightedSum:
      return "radix_weighted_sum";
    case OpKind::kQuantize:
      return "quantize";
    case OpKind::kDequantize:
      return "dequantize";
    case OpKind::kChannelScale:
      return "channel_scale";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kChannelSlice:
      return "channel_slice";
    case OpKind::kUpsample:
      return "upsample";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kDetectDecode:
      return "detect_decode";
  }
  return "unknown";
}

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (int i = 0; i < kOpKindCount; ++i) {
    const auto op = static_cast<OpKind>(i);
    if (op_kind_name(op) == name) return op;
  }
  return std::nullopt;
}

}  // namespace kiln
