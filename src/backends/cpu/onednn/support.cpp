#include "backends/cpu/onednn/support.h"

#include <algorithm>

#include "backends/cpu/onednn/precision.h"
#include "backends/cpu/onednn/radix_kernels.h"

namespace kiln::onednn {
namespace {

// Constants, and FP8 weights (a dequantize of constants), which compile() folds into constants.
bool constant(const Graph& graph, const Node& node, std::size_t first) {
  for (std::size_t i = first; i < node.inputs.size(); ++i) {
    const Value& v = graph.value(node.inputs[i]);
    if (v.is_constant()) continue;
    if (v.producer == kNoNode || graph.node(v.producer).op != OpKind::kDequantize) return false;
    for (const ValueId input : graph.node(v.producer).inputs) {
      if (!graph.value(input).is_constant()) return false;
    }
  }
  return true;
}

bool pool_supported(const Graph& graph, const Node& node) {
  const PoolAttrs& p = node.attr<PoolAttrs>();
  const Shape& xs = graph.value(node.inputs[0]).shape;
  const Shape& ys = graph.value(node.output).shape;
  if (xs.size() != 4 || ys.size() != 4) return false;
  if (node.op != OpKind::kAvgPool2d || !p.count_include_pad) return true;
  // With padding counted, oneDNN divides by the whole kernel, PyTorch by the part inside the declared
  // padding: they differ once ceil_mode adds padding of its own.
  for (std::size_t axis = 0; axis < 2; ++axis) {
    const std::int64_t end = pooling_end_padding(xs[2 + axis], p.kernel[axis], p.stride[axis],
                                                 p.padding[axis], p.padding[2 + axis], ys[2 + axis]);
    if (end > p.padding[2 + axis]) return false;
  }
  return true;
}

}  // namespace

std::int64_t pooling_end_padding(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                 std::int64_t begin, std::int64_t end, std::int64_t out) {
  if ((in + begin + end - kernel) / stride + 1 == out) return end;
  return (out - 1) * stride + kernel - in - begin;
}

bool native_support(const Graph& graph, const Node& node) {
  if (!precision_supported(node.precision)) return false;
  switch (node.op) {
    case OpKind::kConv2d:
      return graph.value(node.inputs[0]).shape.size() == 4 && constant(graph, node, 1);
    case OpKind::kBatchNorm:
      return constant(graph, node, 1);
    case OpKind::kActivation:
    case OpKind::kAdd:
    case OpKind::kGlobalAvgPool:
    case OpKind::kFlatten:
      return true;
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
      return pool_supported(graph, node);
    case OpKind::kLinear:
      return graph.value(node.inputs[0]).shape.size() == 2 && constant(graph, node, 1);
    case OpKind::kRadixSum:
    case OpKind::kRadixSoftmax:
    case OpKind::kRadixWeightedSum:
      return node.attr<RadixAttrs>().radix <= kMaxRadix;
    case OpKind::kChannelScale:  // the radix weighted sum over a single split
      return true;
    case OpKind::kConcat:  // of computed values (a concatenation of constants is folded before)
      return std::none_of(node.inputs.begin(), node.inputs.end(),
                          [&](ValueId v) { return graph.value(v).is_constant(); });
    case OpKind::kChannelSlice:
    case OpKind::kUpsample:
      return graph.value(node.inputs[0]).shape.size() == 4 && !graph.value(node.inputs[0]).is_constant();
    case OpKind::kQuantize:
      return true;
    default:
      // No kernel of the backend's own (attention, detect_decode, and a dequantize, which compile()
      // folds into constants beforehand): the reference fallback step runs it.
      return false;
  }
}

}  // namespace kiln::onednn
