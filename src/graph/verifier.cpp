#include "graph/verifier.h"

#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

// Which inputs of an operator are weights and must therefore be constants.
bool input_must_be_constant(OpKind op, std::size_t index) {
  switch (op) {
    case OpKind::kConv2d:
    case OpKind::kLinear:
      return index >= 1;
    case OpKind::kBatchNorm:
      return index >= 1;
    case OpKind::kDequantize:  // weights only: activations are quantized per tensor by kQuantize
      return true;
    case OpKind::kActivation:
    case OpKind::kAdd:
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool:
    case OpKind::kFlatten:
    case OpKind::kRadixSum:
    case OpKind::kRadixSoftmax:
    case OpKind::kRadixWeightedSum:
    case OpKind::kQuantize:
    case OpKind::kChannelScale:
    case OpKind::kConcat:
    case OpKind::kChannelSlice:
    case OpKind::kUpsample:
    case OpKind::kAttention:
    case OpKind::kDetectDecode:
      return false;
  }
  return false;
}

// An FP8 weight: the output of a kDequantize, whose own inputs the verifier checks are constants.
bool is_dequantized_weight(const Graph& graph, ValueId value) {
  const NodeId producer = graph.value(value).producer;
  return producer != kNoNode && graph.node(producer).op == OpKind::kDequantize;
}

}  // namespace

void verify(const Graph& graph) {
  const auto value_count = static_cast<ValueId>(graph.values().size());
  const auto in_range = [&](ValueId id) { return id >= 0 && id < value_count; };
  require(!graph.inputs().empty(), "graph has no inputs");
  require(!graph.outputs().empty(), "graph has no outputs");
  for (const ValueId id : graph.inputs()) {
    require(in_range(id), "graph input %", id, " does not exist");
    require(graph.value(id).producer == kNoNode && !graph.value(id).is_constant(), "graph input '",
            graph.value(id).name, "' is produced by a layer or is a constant");
  }
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    if (node.dead) continue;
    require(in_range(node.output), "layer '", node.name, "': output value does not exist");
    require(graph.value(node.output).producer == static_cast<NodeId>(i), "layer '", node.name,
            "': its output value names another producer");
    std::vector<Shape> input_shapes;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId input = node.inputs[k];
      require(in_range(input), "layer '", node.name, "': input ", k, " does not exist");
      const Value& value = graph.value(input);
      require(
          !input_must_be_constant(node.op, k) || value.is_constant() || is_dequantized_weight(graph, input),
          "layer '", node.name, "': input ", k, " ('", value.name, "') must be a constant weight");
      require(!value.is_constant() || value.constant.shape() == value.shape, "constant '", value.name,
              "': stored shape differs from its tensor");
      input_shapes.push_back(value.shape);
    }
    const Shape inferred = infer_node_shape(node, input_shapes);
    require(inferred == graph.value(node.output).shape, "layer '", node.name, "': output shape ",
            shape_str(graph.value(node.output).shape), " disagrees with inferred ", shape_str(inferred));
  }
  graph.topological_order();  // fails on a cycle or a read of a removed layer
  for (const ValueId id : graph.outputs()) {
    require(in_range(id), "graph output %", id, " does not exist");
    const Value& value = graph.value(id);
    require(value.producer == kNoNode || !graph.node(value.producer).dead, "graph output '", value.name,
            "' comes from a removed layer");
  }
}

}  // namespace kiln
