#include "graph/precision_assignment.h"

#include "core/error.h"

namespace kiln {

void assign_precision(Graph& graph, Precision precision) {
  require(precision != Precision::kF8, "fp8 is assigned per layer by a quantization recipe");
  for (std::size_t id = 0; id < graph.nodes().size(); ++id) {
    Node& node = graph.node(static_cast<NodeId>(id));
    // FP8 layers keep theirs; quantize points are exact in any precision and stay fp32.
    const bool quantization = node.op == OpKind::kQuantize || node.op == OpKind::kDequantize;
    if (!node.dead && !quantization && node.precision != Precision::kF8) node.precision = precision;
  }
  const auto consumers = graph.consumers();
  if (precision != Precision::kF16) return;
  for (std::size_t id = 0; id < graph.values().size(); ++id) {
    Value& value = graph.value(static_cast<ValueId>(id));
    if (!value.is_constant() || value.constant.dtype() != DType::kF32) continue;
    bool read_by_fp16 = false;
    for (const NodeId reader : consumers[id]) read_by_fp16 |= graph.node(reader).precision == Precision::kF16;
    if (!read_by_fp16) continue;
    value.constant = value.constant.to(DType::kF16);
    value.dtype = DType::kF16;
  }
}

void widen_constants_to_f32(Graph& graph) {
  for (std::size_t id = 0; id < graph.values().size(); ++id) {
    Value& value = graph.value(static_cast<ValueId>(id));
    if (!value.is_constant() || value.constant.dtype() == DType::kF32) continue;
    require(dtype_is_float(value.constant.dtype()), "constant '", value.name, "' is ",
            dtype_name(value.constant.dtype()), "; expected a floating-point weight");
    value.constant = value.constant.to(DType::kF32);
    value.dtype = DType::kF32;
  }
}

}  // namespace kiln
