// FP8 quantize points: E4M3 codes of an activation, which the FP8 convolutions reading it take as input
// (their dequantize points are folded into them at compile time, conv_steps.cpp).
#include "backends/cuda/program_builder.h"
#include "backends/cuda/quantization_kernels.h"

namespace kiln::cuda {

void ProgramBuilder::add_quantize(NodeId id) {
  const Node& node = graph_.node(id);
  const void* x = ptr(node.inputs[0]);
  auto* y = static_cast<std::uint8_t*>(ptr(node.output));
  const std::int64_t count = shape_numel(shape(node.output));
  const float scale = node.attr<QuantizeAttrs>().scale;
  const Elem e = elem_;
  add_step(id, "quantize to E4M3",
           [=](cudaStream_t s) { check(quantize_e4m3(x, e, y, count, scale, s), "quantizing to E4M3"); });
}

}  // namespace kiln::cuda
