// kiln's graph IR.
//
// A Graph owns values and nodes. A value is a graph input, a constant (a weight, holding its tensor) or
// the single output of a node. A node has an operator kind, a layer name (the checkpoint's module path,
// e.g. "layer1.0.conv2.fc1"), input value ids, typed attributes and a precision. Ids index the vectors
// and stay stable: passes mark nodes dead and `compact()` renumbers once they are done.
//
// Shapes carry the batch as dimension 0; -1 there means "any batch" and is bound when shapes are
// inferred for concrete inputs (see shape_inference.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "graph/attributes.h"
#include "graph/op_info.h"

namespace kiln {

using ValueId = std::int32_t;
using NodeId = std::int32_t;
inline constexpr NodeId kNoNode = -1;

// The arithmetic a node runs in. fp16 and bf16 mean storage in that format with fp32 accumulation
// (graph/precision_assignment.h). fp8 and int8 are quantized: a recipe chooses their layers, which read
// values through quantize points (quant/fp8_rewrite.h).
enum class Precision : std::uint8_t { kF32, kF16, kF8, kBf16, kI8 };
std::string_view precision_name(Precision precision);
std::optional<Precision> precision_from_name(std::string_view name);
inline bool is_quantized(Precision precision) {
  return precision == Precision::kF8 || precision == Precision::kI8;
}

struct Value {
  std::string name;
  Shape shape;
  DType dtype = DType::kF32;
  Tensor constant;            // non-empty for weights
  NodeId producer = kNoNode;  // kNoNode for graph inputs and constants
  bool is_constant() const { return !constant.empty(); }
};

struct Node {
  OpKind op = OpKind::kConv2d;
  std::string name;
  std::vector<ValueId> inputs;
  ValueId output = -1;
  Attributes attrs;
  Precision precision = Precision::kF32;
  bool dead = false;

  template <typename A>
  const A& attr() const {
    return std::get<A>(attrs);
  }
  template <typename A>
  A& attr() {
    return std::get<A>(attrs);
  }
};

class Graph {
 public:
  ValueId add_input(std::string name, Shape shape, DType dtype = DType::kF32);
  ValueId add_constant(std::string name, Tensor tensor);
  // Adds a node, infers its output shape from its inputs (fails with the layer name if they do not fit)
  // and returns the output value, named after the node.
  ValueId add_node(OpKind op, std::string name, std::vector<ValueId> inputs, Attributes attrs = {});
  void mark_output(ValueId value);

  const Value& value(ValueId id) const { return values_.at(static_cast<std::size_t>(id)); }
  Value& value(ValueId id) { return values_.at(static_cast<std::size_t>(id)); }
  const Node& node(NodeId id) const { return nodes_.at(static_cast<std::size_t>(id)); }
  Node& node(NodeId id) { return nodes_.at(static_cast<std::size_t>(id)); }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::optional<NodeId> find_node(std::string_view name) const;

  // Live nodes in an order where every producer precedes its consumers; ties keep insertion order,
  // so the order is deterministic. Fails if the graph has a cycle.
  std::vector<NodeId> topological_order() const;
  // For each value, the live nodes that read it.
  std::vector<std::vector<NodeId>> consumers() const;
  // Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_uses(ValueId from, ValueId to);
  // Drops dead nodes and values nothing refers to; renumbers ids.
  void compact();

  std::size_t live_node_count() const;
  std::size_t parameter_count() const;  // elements in constants referenced by live nodes

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
};

}  // namespace kiln
