#include "graph/precision_assignment.h"

#include "core/error.h"

namespace kiln {

void assign_precision(Graph& graph, Precision precision) {
  require(!is_quantized(precision), precision_name(precision),
          " is assigned per layer by a quantization recipe");
  for (std::size_t id = 0; id < graph.nodes().size(); ++id) {
    Node& node = graph.node(static_cast<NodeId>(id));
    // Quantized layers keep theirs; quantize points are exact in any precision and stay fp32.
    const bool quantization = node.op == OpKind::kQuantize || node.op == OpKind::kDequantize;
    if (!node.dead && !quantization && !is_quantized(node.precision)) node.precision = precision;
  }
  const std::optional<DType> storage = storage_dtype(precision);
  if (!storage) return;
  const auto consumers = graph.consumers();
  for (std::size_t id = 0; id < graph.values().size(); ++id) {
    Value& value = graph.value(static_cast<ValueId>(id));
    if (!value.is_constant() || value.constant.dtype() != DType::kF32) continue;
    bool read_in_precision = false;
    for (const NodeId reader : consumers[id]) read_in_precision |= graph.node(reader).precision == precision;
    if (!read_in_precision) continue;
    value.constant = value.constant.to(*storage);
    value.dtype = *storage;
  }
}

std::optional<DType> storage_dtype(Precision precision) {
  switch (precision) {
    case Precision::kF16:
      return DType::kF16;
    case Precision::kBf16:
      return DType::kBF16;
    case Precision::kF32:
    case Precision::kF8:  // quantized weights are stored by the quantizer, not here
    case Precision::kI8:
      return std::nullopt;
  }
  return std::nullopt;
}

float rounded_to_storage(float value, Precision precision) {
  switch (precision) {
    case Precision::kF16:
    case Precision::kF8:  // FP8 layers write fp16
      return round_to_f16(value);
    case Precision::kBf16:
      return round_to_bf16(value);
    case Precision::kF32:
    case Precision::kI8:  // int8 layers dequantize to f32 and write it
      return value;
  }
  return value;
}

void widen_constants_to_f32(Graph& graph) {
  for (std::size_t id = 0; id < graph.values().size(); ++id) {
    Value& value = graph.value(static_cast<ValueId>(id));
    if (!value.is_constant() || value.constant.dtype() == DType::kF32) continue;
    // int8 weight codes widen exactly too.
    require(dtype_is_float(value.constant.dtype()) || value.constant.dtype() == DType::kI8, "constant '",
            value.name, "' is ", dtype_name(value.constant.dtype()),
            "; expected a floating-point weight or int8 codes");
    value.constant = value.constant.to(DType::kF32);
    value.dtype = DType::kF32;
  }
}

}  // namespace kiln
