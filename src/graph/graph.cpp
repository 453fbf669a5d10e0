#include "graph/graph.h"

#include <algorithm>
#include <array>
#include <queue>

#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln {

namespace {

constexpr std::array<std::pair<Precision, std::string_view>, 5> kPrecisionNames = {{
    {Precision::kF32, "fp32"},
    {Precision::kF16, "fp16"},
    {Precision::kF8, "fp8"},
    {Precision::kBf16, "bf16"},
    {Precision::kI8, "int8"},
}};

}  // namespace

std::string_view precision_name(Precision precision) {
  for (const auto& [value, name] : kPrecisionNames) {
    if (value == precision) return name;
  }
  return "unknown";
}

std::optional<Precision> precision_from_name(std::string_view name) {
  for (const auto& [value, known] : kPrecisionNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

ValueId Graph::add_input(std::string name, Shape shape, DType dtype) {
  const auto id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{std::move(name), std::move(shape), dtype, Tensor{}, kNoNode});
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_constant(std::string name, Tensor tensor) {
  require(!tensor.empty(), "constant '", name, "' has no data");
  const auto id = static_cast<ValueId>(values_.size());
  Shape shape = tensor.shape();
  const DType dtype = tensor.dtype();
  values_.push_back(Value{std::move(name), std::move(shape), dtype, std::move(tensor), kNoNode});
  return id;
}

ValueId Graph::add_node(OpKind op, std::string name, std::vector<ValueId> inputs, Attributes attrs) {
  Node node;
  node.op = op;
  node.name = std::move(name);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  std::vector<Shape> input_shapes;
  for (const ValueId input : node.inputs) {
    require(input >= 0 && static_cast<std::size_t>(input) < values_.size(), "layer '", node.name,
            "': input value %", input, " does not exist");
    input_shapes.push_back(value(input).shape);
  }
  Shape shape = infer_node_shape(node, input_shapes);
  const auto node_id = static_cast<NodeId>(nodes_.size());
  const auto value_id = static_cast<ValueId>(values_.size());
  values_.push_back(Value{node.name, std::move(shape), DType::kF32, Tensor{}, node_id});
  node.output = value_id;
  nodes_.push_back(std::move(node));
  return value_id;
}

void Graph::mark_output(ValueId value_id) {
  require(value_id >= 0 && static_cast<std::size_t>(value_id) < values_.size(), "output value %", value_id,
          " does not exist");
  outputs_.push_back(value_id);
}

std::optional<NodeId> Graph::find_node(std::string_view name) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].dead && nodes_[i].name == name) return static_cast<NodeId>(i);
  }
  return std::nullopt;
}

std::vector<NodeId> Graph::topological_order() const {
  // Kahn's algorithm with a min-heap on node id, so ties keep insertion order.
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<NodeId>> readers(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].dead) continue;
    for (const ValueId input : nodes_[i].inputs) {
      const NodeId producer = value(input).producer;
      if (producer == kNoNode) continue;
      require(!node(producer).dead, "layer '", nodes_[i].name, "' reads the output of removed layer '",
              node(producer).name, "'");
      ++pending[i];
      readers[static_cast<std::size_t>(producer)].push_back(static_cast<NodeId>(i));
    }
  }
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].dead && pending[i] == 0) ready.push(static_cast<NodeId>(i));
  }
  std::vector<NodeId> order;
  while (!ready.empty()) {
    const NodeId current = ready.top();
    ready.pop();
    order.push_back(current);
    for (const NodeId reader : readers[static_cast<std::size_t>(current)]) {
      if (--pending[static_cast<std::size_t>(reader)] == 0) ready.push(reader);
    }
  }
  require(order.size() == live_node_count(), "graph has a cycle");
  return order;
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> result(values_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].dead) continue;
    for (const ValueId input : nodes_[i].inputs) {
      auto& list = result[static_cast<std::size_t>(input)];
      if (list.empty() || list.back() != static_cast<NodeId>(i)) list.push_back(static_cast<NodeId>(i));
    }
  }
  return result;
}

void Graph::replace_uses(ValueId from, ValueId to) {
  for (auto& current : nodes_) {
    if (current.dead) continue;
    std::replace(current.inputs.begin(), current.inputs.end(), from, to);
  }
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

void Graph::compact() {
  std::vector<bool> used(values_.size(), false);
  for (const ValueId id : inputs_) used[static_cast<std::size_t>(id)] = true;
  for (const ValueId id : outputs_) used[static_cast<std::size_t>(id)] = true;
  for (const auto& current : nodes_) {
    if (current.dead) continue;
    used[static_cast<std::size_t>(current.output)] = true;
    for (const ValueId input : current.inputs) used[static_cast<std::size_t>(input)] = true;
  }
  std::vector<ValueId> value_map(values_.size(), -1);
  std::vector<Value> kept_values;
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (!used[i]) continue;
    value_map[i] = static_cast<ValueId>(kept_values.size());
    kept_values.push_back(std::move(values_[i]));
  }
  std::vector<Node> kept_nodes;
  for (auto& current : nodes_) {
    if (current.dead) continue;
    const auto new_id = static_cast<NodeId>(kept_nodes.size());
    current.output = value_map[static_cast<std::size_t>(current.output)];
    for (auto& input : current.inputs) input = value_map[static_cast<std::size_t>(input)];
    kept_values[static_cast<std::size_t>(current.output)].producer = new_id;
    kept_nodes.push_back(std::move(current));
  }
  for (auto& id : inputs_) id = value_map[static_cast<std::size_t>(id)];
  for (auto& id : outputs_) id = value_map[static_cast<std::size_t>(id)];
  values_ = std::move(kept_values);
  nodes_ = std::move(kept_nodes);
}

std::size_t Graph::live_node_count() const {
  return static_cast<std::size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& current) { return !current.dead; }));
}

std::size_t Graph::parameter_count() const {
  std::vector<bool> counted(values_.size(), false);
  std::size_t total = 0;
  for (const auto& current : nodes_) {
    if (current.dead) continue;
    for (const ValueId input : current.inputs) {
      const auto index = static_cast<std::size_t>(input);
      if (counted[index] || !values_[index].is_constant()) continue;
      counted[index] = true;
      total += static_cast<std::size_t>(values_[index].constant.numel());
    }
  }
  return total;
}

}  // namespace kiln
