// Quantize points: E4M3 or int8 codes of an activation, which the FP8 or int8 convolutions reading it take
// as input (their dequantize points are folded into them at compile time, conv_steps.cpp). A quantize point
// fused into its input's producer (quantize_fusion.h) has no step: the producer's step writes the codes.
#include "backends/cuda/kernels/quantization_kernels.h"
#include "backends/cuda/program/program_builder.h"

namespace kiln::cuda {

void ProgramBuilder::add_quantize(NodeId id) {
  const Node& node = graph_.node(id);
  const void* x = ptr(node.inputs[0]);
  const QuantizeAttrs& a = node.attr<QuantizeAttrs>();
  const CodesOut codes{static_cast<std::uint8_t*>(ptr(node.output)), a.scale,
                       a.int8 ? CodeGrid::kInt8 : CodeGrid::kE4m3};
  const std::int64_t count = shape_numel(shape(node.output));
  const bool int8 = a.int8;
  const Elem e = elem_;
  add_step(id, int8 ? "quantize to int8" : "quantize to E4M3", [=](cudaStream_t s) {
    check(quantize_codes(x, e, codes, count, s), int8 ? "quantizing to int8" : "quantizing to E4M3");
  });
}

void* ProgramBuilder::value_out(NodeId producer) const {
  const Node& node = graph_.node(producer);
  return fusions_.keeps_value[static_cast<std::size_t>(producer)] ? ptr(node.output) : nullptr;
}

CodesOut ProgramBuilder::codes_out(NodeId producer) const {
  const NodeId quantize = fusions_.quantize_into_producer[static_cast<std::size_t>(producer)];
  if (quantize == kNoNode) return {};
  const Node& q = graph_.node(quantize);
  const QuantizeAttrs& a = q.attr<QuantizeAttrs>();
  return {static_cast<std::uint8_t*>(ptr(q.output)), a.scale, a.int8 ? CodeGrid::kInt8 : CodeGrid::kE4m3};
}

std::string ProgramBuilder::codes_label(NodeId producer) const {
  const auto index = static_cast<std::size_t>(producer);
  if (fusions_.quantize_into_producer[index] == kNoNode) return {};
  return cat(" + quantize to ", codes_out(producer).grid == CodeGrid::kInt8 ? "int8" : "E4M3",
             fusions_.keeps_value[index] ? " (dual write)" : "");
}

}  // namespace kiln::cuda
