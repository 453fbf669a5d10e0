#include "graph/printer.h"

#include <sstream>

#include "core/error.h"

namespace kiln {

namespace {

std::string describe_attrs(const Attributes& attrs) {
  struct Describe {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(const ConvAttrs& a) const {
      std::string text = cat("k", a.kernel[0], "x", a.kernel[1], " s", a.stride[0], "x", a.stride[1], " p",
                             a.padding[0], ",", a.padding[1], ",", a.padding[2], ",", a.padding[3]);
      if (a.dilation[0] != 1 || a.dilation[1] != 1) text += cat(" d", a.dilation[0], "x", a.dilation[1]);
      if (a.groups != 1) text += cat(" g", a.groups);
      if (a.activation != Activation::kNone) text += cat(" +", activation_name(a.activation));
      return text;
    }
    std::string operator()(const BatchNormAttrs& a) const { return cat("eps=", a.epsilon); }
    std::string operator()(const ActivationAttrs& a) const {
      return std::string(activation_name(a.activation));
    }
    std::string operator()(const PoolAttrs& a) const {
      std::string text = cat("k", a.kernel[0], "x", a.kernel[1], " s", a.stride[0], "x", a.stride[1], " p",
                             a.padding[0], ",", a.padding[1], ",", a.padding[2], ",", a.padding[3]);
      if (a.ceil_mode) text += " ceil";
      if (!a.count_include_pad) text += " exclude_pad";
      return text;
    }
    std::string operator()(const AddAttrs& a) const {
      return a.activation == Activation::kNone ? "" : cat("+", activation_name(a.activation));
    }
    std::string operator()(const RadixAttrs& a) const {
      return cat("radix=", a.radix, " card=", a.cardinality);
    }
    std::string operator()(const QuantizeAttrs& a) const { return cat("scale=", a.scale); }
    std::string operator()(const ConcatAttrs& a) const { return cat("axis=", a.axis); }
    std::string operator()(const SliceAttrs& a) const {
      return cat("[", a.begin, ":", a.end, ")", a.groups == 1 ? "" : cat(" of ", a.groups, " groups"));
    }
    std::string operator()(const UpsampleAttrs& a) const { return cat("nearest x", a.scale); }
    std::string operator()(const AttentionAttrs& a) const {
      return cat("heads=", a.heads, " key=", a.key_dim, " head=", a.head_dim);
    }
    std::string operator()(const DetectAttrs& a) const {
      return cat("reg_max=", a.reg_max, " stride=", a.stride);
    }
  };
  return std::visit(Describe{}, attrs);
}

std::string describe_value(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  if (value.is_constant()) return cat(value.name, shape_str(value.shape));
  return cat("%", id);
}

}  // namespace

std::string print_graph(const Graph& graph) {
  std::ostringstream out;
  for (const ValueId id : graph.inputs()) {
    out << "input %" << id << " " << graph.value(id).name << " " << shape_str(graph.value(id).shape) << "\n";
  }
  for (const NodeId node_id : graph.topological_order()) {
    const Node& node = graph.node(node_id);
    out << "%" << node.output << " = " << op_kind_name(node.op) << " " << node.name << "(";
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      out << (i == 0 ? "" : ", ") << describe_value(graph, node.inputs[i]);
    }
    out << ")";
    const std::string attrs = describe_attrs(node.attrs);
    if (!attrs.empty()) out << " {" << attrs << "}";
    out << " -> " << shape_str(graph.value(node.output).shape);
    if (node.precision != Precision::kF32) out << " @" << precision_name(node.precision);
    out << "\n";
  }
  for (const ValueId id : graph.outputs()) out << "output %" << id << " " << graph.value(id).name << "\n";
  return out.str();
}

}  // namespace kiln
