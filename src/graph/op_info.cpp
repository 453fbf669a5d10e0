#include "graph/op_info.h"

#include "core/error.h"
#include "graph/graph.h"

namespace kiln {

bool is_unit_window_pool(const Graph& /*graph*/, const Node& node) {
  const auto& attrs = node.attr<PoolAttrs>();
  return attrs.kernel == std::array<std::int64_t, 2>{1, 1} &&
         attrs.stride == std::array<std::int64_t, 2>{1, 1} &&
         attrs.padding == std::array<std::int64_t, 4>{0, 0, 0, 0};
}

bool is_flatten_of_rank_2(const Graph& graph, const Node& node) {
  return graph.value(node.inputs[0]).shape.size() == 2;
}

bool is_radix_1_sum(const Graph& /*graph*/, const Node& node) { return node.attr<RadixAttrs>().radix == 1; }

bool is_activation_none(const Graph& /*graph*/, const Node& node) {
  return node.attr<ActivationAttrs>().activation == Activation::kNone;
}

const OpInfo& op_info(OpKind op) {
  const auto index = static_cast<std::size_t>(op);
  require(index < kOpTable.size(), "operator ", index, " has no row in kOpTable (graph/op_info.h)");
  return kOpTable[index];
}

std::string_view op_kind_name(OpKind op) {
  const auto index = static_cast<std::size_t>(op);
  return index < kOpTable.size() ? kOpTable[index].name : "unknown";
}

std::optional<OpKind> op_kind_from_name(std::string_view name) {
  for (const OpInfo& info : kOpTable) {
    if (info.name == name) return info.op;
  }
  return std::nullopt;
}

}  // namespace kiln
