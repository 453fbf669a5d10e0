// Nodes the backend has no kernel for run on the reference kernels: inputs reordered to row-major
// layouts, the reference result copied into the value's buffer. This path allocates (the reference
// kernels return new tensors); compiled ResNet/ResNeSt graphs never take it.
#include <cstring>

#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/precision.h"
#include "reference/kernels.h"
#include "core/error.h"

namespace kiln::onednn {
void ProgramBuilder::add_fallback(const Node& node) {
  // Per input: a constant tensor, or a row-major view of the value's buffer made at run time.
  struct Operand {
    Tensor constant;
    dnnl::memory memory;
    Shape shape;
  };
  note("reference kernel");
  std::vector<Operand> operands;
  for (const ValueId input_value : node.inputs) {
    const Value& v = graph_.value(input_value);
    if (v.is_constant()) {
      operands.push_back({prepare_constant(v.constant, node.precision), {}, {}});
    } else {
      const Shape& s = shape(input_value);
      operands.push_back({{}, input_as(input_value, plain_desc(s)), s});
    }
  }
  const dnnl::memory out = output(node.output, plain_desc(shape(node.output)));
  call([operands = std::move(operands), out, node](const dnnl::stream&) {
    std::vector<Tensor> in;
    in.reserve(operands.size());
    for (const Operand& operand : operands) {
      in.push_back(operand.memory
                       ? Tensor::view(DType::kF32, operand.shape, operand.memory.get_data_handle(), nullptr)
                       : operand.constant);
    }
    std::vector<const Tensor*> pointers;
    for (const Tensor& tensor : in) pointers.push_back(&tensor);
    const Tensor y = reference::run_op(node, pointers);
    require(y.nbytes() == out.get_desc().get_size(), "layer '", node.name, "': reference output ",
            shape_str(y.shape()), " does not match the planned buffer");
    std::memcpy(out.get_data_handle(), y.bytes(), y.nbytes());
  });
}

}  // namespace kiln::onednn
