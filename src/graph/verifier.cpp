#include "graph/verifier.h"

#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

// An FP8 weight: the output of a kDequantize, whose own inputs the verifier checks are constants.
bool is_dequantized_weight(const Graph& graph, ValueId value) {
  const NodeId producer = graph.value(value).producer;
  return producer != kNoNode && graph.node(producer).op == OpKind::kDequantize;
}

// "conv attributes", or "no attributes" for std::monostate.
std::string describe_struct(std::size_t attributes) {
  if (attributes == kAttributeIndex<std::monostate>) return "no attributes";
  return cat(kAttributeStructNames[attributes], " attributes");
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
    const OpInfo& info = op_info(node.op);
    require(in_range(node.output), "layer '", node.name, "': output value does not exist");
    require(graph.value(node.output).producer == static_cast<NodeId>(i), "layer '", node.name,
            "': its output value names another producer");
    require(node.attrs.index() == info.attributes, "layer '", node.name, "' (", info.name, "): holds ",
            describe_struct(node.attrs.index()), ", expected ", describe_struct(info.attributes));
    std::vector<Shape> input_shapes;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId input = node.inputs[k];
      require(in_range(input), "layer '", node.name, "': input ", k, " does not exist");
      const Value& value = graph.value(input);
      require(!info.input_must_be_constant(k) || value.is_constant() || is_dequantized_weight(graph, input),
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
