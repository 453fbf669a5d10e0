#include "graph/printer.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace kiln {

namespace {

// "key=value" per field, in the order attributes.h lists them. Pairs are (h, w) and print as 3x3;
// paddings are (top, left, bottom, right) and print as 1,1,1,1.
class FieldPrinter {
 public:
  void operator()(std::string_view key, std::int64_t value, std::int64_t /*min*/) { add(key, cat(value)); }
  template <std::size_t N>
  void operator()(std::string_view key, const std::array<std::int64_t, N>& value, std::int64_t /*min*/) {
    std::string text;
    for (std::size_t i = 0; i < N; ++i) text += cat(i == 0 ? "" : (N == 2 ? "x" : ","), value[i]);
    add(key, text);
  }
  void operator()(std::string_view key, float value) { add(key, cat(value)); }
  void operator()(std::string_view key, bool value) { add(key, value ? "true" : "false"); }
  void operator()(std::string_view key, bool value, AbsentIsFalse) {
    if (value) add(key, "true");
  }
  // A list as its length and range: channel_scales=32:[0.0012,0.034].
  void operator()(std::string_view key, const std::vector<float>& values, AbsentIsEmpty) {
    if (values.empty()) return;
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    add(key, cat(values.size(), ":[", *low, ",", *high, "]"));
  }
  void operator()(std::string_view key, Activation value) { add(key, std::string(activation_name(value))); }
  const std::string& text() const { return text_; }

 private:
  void add(std::string_view key, const std::string& value) {
    text_ += cat(text_.empty() ? "" : " ", key, "=", value);
  }
  std::string text_;
};

std::string describe_attrs(const Attributes& attrs) {
  FieldPrinter printer;
  visit_attribute_struct(attrs, [&](const auto& alternative) {
    std::decay_t<decltype(alternative)>::fields(alternative, printer);
  });
  return printer.text();
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
