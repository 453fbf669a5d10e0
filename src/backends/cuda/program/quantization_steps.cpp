// Quantize points: E4M3 or int8 codes of an activation, which the FP8 or int8 convolutions reading it take
// as input (their dequantize points are folded into them at compile time, conv_steps.cpp). A quantize point
// fused into its input's producer (quantize_fusion.h) has no step: the producer's step writes the codes.
#include "backends/cuda/kernels/quantization_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_quantize(NodeId id) {
  const Node& node = graph_.node(id);
  const void* x = ptr(node.inputs[0]);
  auto* y = static_cast<std::uint8_t*>(ptr(node.output));
  const std::int64_t count = shape_numel(shape(node.output));
  const float scale = node.attr<QuantizeAttrs>().scale;
  const bool int8 = node.attr<QuantizeAttrs>().int8;
  const Elem e = elem_;
  add_step(id, int8 ? "quantize to int8" : "quantize to E4M3", [=](cudaStream_t s) {
    check(quantize_codes(x, e, y, count, scale, int8, s), int8 ? "quantizing to int8" : "quantizing to E4M3");
  });
}

void* ProgramBuilder::value_out(NodeId producer) const {
  const Node& node = graph_.node(producer);
  return fusions_.keeps_value[static_cast<std::size_t>(producer)] ? ptr(node.output) : nullptr;
}

E4m3Out ProgramBuilder::codes_out(NodeId producer) const {
  const NodeId quantize = fusions_.quantize_into_producer[static_cast<std::size_t>(producer)];
  if (quantize == kNoNode) return {};
  const Node& q = graph_.node(quantize);
  return {static_cast<std::uint8_t*>(ptr(q.output)), q.attr<QuantizeAttrs>().scale};
}

bool ProgramBuilder::writes_int8_codes(NodeId producer) const {
  const NodeId quantize = fusions_.quantize_into_producer[static_cast<std::size_t>(producer)];
  return quantize != kNoNode && graph_.node(quantize).attr<QuantizeAttrs>().int8;
}

std::string ProgramBuilder::codes_label(NodeId producer) const {
  const auto index = static_cast<std::size_t>(producer);
  if (fusions_.quantize_into_producer[index] == kNoNode) return {};
  return cat(" + quantize to ", writes_int8_codes(producer) ? "int8" : "E4M3",
             fusions_.keeps_value[index] ? " (dual write)" : "");
}

}  // namespace kiln::cuda
