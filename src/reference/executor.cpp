#include "reference/executor.h"

#include "reference/kernels.h"
#include "core/error.h"
#include "graph/op_info.h"
#include "graph/precision_assignment.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

// A tensor as a layer of `precision` stores it: fp16 and fp8 layers (whose FP8 products accumulate in
// fp32) write fp16, bf16 layers bf16.
Tensor stored(const Tensor& tensor, Precision precision) {
  Tensor rounded = tensor.clone();
  for (float& value : rounded.mutable_f32()) value = rounded_to_storage(value, precision);
  return rounded;
}

// fp16 and bf16 layers read their activations rounded to their storage; fp8 and int8 layers read theirs
// through kQuantize.
bool reads_rounded(Precision precision) { return storage_dtype(precision).has_value(); }

// The node writing `value`, required to be a quantize point of `op`.
const Node& quantize_point(const Graph& graph, const Node& layer, ValueId value, OpKind op) {
  const NodeId producer = graph.value(value).producer;
  require(producer != kNoNode && graph.node(producer).op == op &&
              (op != OpKind::kQuantize || graph.node(producer).attr<QuantizeAttrs>().int8),
          "int8 layer '", layer.name, "': expected its ", op == OpKind::kQuantize ? "input" : "weight",
          " from an int8 ", op_kind_name(op), ", got '", graph.value(value).name, "'");
  return graph.node(producer);
}

// An int8 convolution on the codes and scales of its quantize points: the input's codes are recovered
// exactly from the quantized values (per channel where the point has channel scales), the weight's are
// the dequantize's constant inputs.
Tensor run_int8_conv(const Graph& graph, const Node& node, const std::vector<const Tensor*>& inputs) {
  const QuantizeAttrs& x_quantize =
      quantize_point(graph, node, node.inputs[0], OpKind::kQuantize).attr<QuantizeAttrs>();
  const Node& weights = quantize_point(graph, node, node.inputs[1], OpKind::kDequantize);
  const Value& codes = graph.value(weights.inputs[0]);
  const Value& scales = graph.value(weights.inputs[1]);
  require(codes.is_constant() && scales.is_constant(), "int8 layer '", node.name,
          "': expected constant weight codes and scales");
  const std::span<const float> x_scales = x_quantize.per_channel()
                                              ? std::span<const float>(x_quantize.channel_scales)
                                              : std::span<const float>(&x_quantize.scale, 1);
  try {
    return reference::conv2d_int8(
        reference::int8_codes_of(*inputs[0], x_quantize), x_scales, codes.constant,
        scales.constant.dtype() == DType::kF32 ? scales.constant : scales.constant.to(DType::kF32),
        inputs.size() > 2 ? inputs[2] : nullptr, node.attr<ConvAttrs>());
  } catch (const Error& error) {
    fail("int8 layer '", node.name, "': ", error.what());
  }
}

}  // namespace

std::vector<Tensor> run_reference(const Graph& graph, const std::vector<Tensor>& inputs,
                                  const NodeObserver& observer) {
  std::vector<Shape> input_shapes;
  for (const Tensor& input : inputs) {
    require(input.dtype() == DType::kF32, "graph inputs must be f32, got ", dtype_name(input.dtype()));
    input_shapes.push_back(input.shape());
  }
  infer_shapes(graph, input_shapes);  // validates the inputs against the graph before any work

  const std::vector<NodeId> order = graph.topological_order();
  // Remaining readers of each value; a value is dropped when its count reaches zero.
  std::vector<int> readers(graph.values().size(), 0);
  for (const NodeId id : order) {
    for (const ValueId input : graph.node(id).inputs) ++readers[static_cast<std::size_t>(input)];
  }
  for (const ValueId output : graph.outputs()) ++readers[static_cast<std::size_t>(output)];

  std::vector<Tensor> values(graph.values().size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    values[static_cast<std::size_t>(graph.inputs()[i])] = inputs[i];
  for (std::size_t i = 0; i < graph.values().size(); ++i) {
    if (graph.values()[i].is_constant()) values[i] = graph.values()[i].constant;
  }

  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    const bool rounded = reads_rounded(node.precision);
    std::vector<Tensor> rounded_inputs;
    rounded_inputs.reserve(node.inputs.size());
    std::vector<const Tensor*> node_inputs;
    for (const ValueId input : node.inputs) {
      const Tensor& tensor = values[static_cast<std::size_t>(input)];
      if (rounded && !graph.value(input).is_constant()) {
        rounded_inputs.push_back(stored(tensor, node.precision));
        node_inputs.push_back(&rounded_inputs.back());
      } else {
        node_inputs.push_back(&tensor);
      }
    }
    const bool int8_conv = node.op == OpKind::kConv2d && node.precision == Precision::kI8;
    Tensor output =
        int8_conv ? run_int8_conv(graph, node, node_inputs) : reference::run_op(node, node_inputs);
    if (node.precision != Precision::kF32) output = stored(output, node.precision);
    if (observer) observer(node, output);
    values[static_cast<std::size_t>(node.output)] = std::move(output);
    for (const ValueId input : node.inputs) {
      const auto index = static_cast<std::size_t>(input);
      if (--readers[index] == 0 && !graph.value(input).is_constant()) values[index] = Tensor{};
    }
  }
  std::vector<Tensor> outputs;
  for (const ValueId output : graph.outputs()) outputs.push_back(values[static_cast<std::size_t>(output)]);
  return outputs;
}

}  // namespace kiln
