// Nodes the backend has no kernel for run on the reference kernels: inputs reordered to row-major
// layouts, the reference result copied into the value's buffer. This path allocates (the reference
// kernels return new tensors); compiled ResNet/ResNeSt graphs never take it.
#include <cstring>

#include "backends/cpu/onednn/plan_builder.h"
#include "backends/cpu/onednn/precision.h"
#include "backends/cpu/reference_kernels.h"
#include "core/error.h"

namespace kiln::onednn {
namespace {

Tensor run_reference_op(const Node& node, const std::vector<Tensor>& in) {
  const auto optional = [&](std::size_t index) { return in.size() > index ? &in[index] : nullptr; };
  switch (node.op) {
    case OpKind::kConv2d:
      return reference::conv2d(in[0], in[1], optional(2), node.attr<ConvAttrs>());
    case OpKind::kBatchNorm:
      return reference::batch_norm(in[0], in[1], in[2], in[3], in[4], node.attr<BatchNormAttrs>().epsilon);
    case OpKind::kActivation:
      return reference::activation(in[0], node.attr<ActivationAttrs>().activation);
    case OpKind::kAdd:
      return reference::add(in[0], in[1], node.attr<AddAttrs>().activation);
    case OpKind::kMaxPool2d:
      return reference::max_pool2d(in[0], node.attr<PoolAttrs>());
    case OpKind::kAvgPool2d:
      return reference::avg_pool2d(in[0], node.attr<PoolAttrs>());
    case OpKind::kGlobalAvgPool:
      return reference::global_avg_pool(in[0]);
    case OpKind::kFlatten:
      return reference::flatten(in[0]);
    case OpKind::kLinear:
      return reference::linear(in[0], in[1], optional(2));
    case OpKind::kRadixSum:
      return reference::radix_sum(in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixSoftmax:
      return reference::radix_softmax(in[0], node.attr<RadixAttrs>());
    case OpKind::kRadixWeightedSum:
      return reference::radix_weighted_sum(in[0], in[1], node.attr<RadixAttrs>());
  }
  fail("layer '", node.name, "': unknown operator");
}

}  // namespace

void PlanBuilder::add_fallback(const Node& node) {
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
    const Tensor y = run_reference_op(node, in);
    require(y.nbytes() == out.get_desc().get_size(), "layer '", node.name, "': reference output ",
            shape_str(y.shape()), " does not match the planned buffer");
    std::memcpy(out.get_data_handle(), y.bytes(), y.nbytes());
  });
}

}  // namespace kiln::onednn
