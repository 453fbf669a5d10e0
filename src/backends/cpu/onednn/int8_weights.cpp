#include "backends/cpu/onednn/int8_weights.h"

#include <cmath>

#include "core/error.h"

namespace kiln::onednn {

namespace {

// Codes widened to f32 (as the engine hands graphs over) narrowed back; each must be an int8 code.
Tensor s8_codes(const Tensor& codes, const std::string& layer) {
  if (codes.dtype() == DType::kI8) return codes;
  const Tensor f32 = codes.dtype() == DType::kF32 ? codes : codes.to(DType::kF32);
  Tensor out(DType::kI8, f32.shape());
  auto* data = out.mutable_data<std::int8_t>();
  const auto values = f32.f32();
  for (std::size_t i = 0; i < values.size(); ++i) {
    require(std::nearbyint(values[i]) == values[i] && std::fabs(values[i]) <= 127.0f, "int8 layer '", layer,
            "': weight code ", values[i], " at index ", i, " is not an int8 code");
    data[i] = static_cast<std::int8_t>(values[i]);
  }
  return out;
}

}  // namespace

std::map<std::string, Int8Weights> int8_conv_weights(const Graph& graph) {
  std::map<std::string, Int8Weights> weights;
  for (const Node& node : graph.nodes()) {
    if (node.dead || node.op != OpKind::kConv2d || node.precision != Precision::kI8) continue;
    const NodeId producer = graph.value(node.inputs[1]).producer;
    if (producer == kNoNode || graph.node(producer).op != OpKind::kDequantize) continue;
    const Node& dequantize = graph.node(producer);
    const Value& codes = graph.value(dequantize.inputs[0]);
    const Value& scales = graph.value(dequantize.inputs[1]);
    if (!codes.is_constant() || !scales.is_constant()) continue;
    const Tensor f32_scales =
        scales.constant.dtype() == DType::kF32 ? scales.constant : scales.constant.to(DType::kF32);
    weights[node.name] = {s8_codes(codes.constant, node.name),
                          std::vector<float>(f32_scales.f32().begin(), f32_scales.f32().end())};
  }
  return weights;
}

}  // namespace kiln::onednn
