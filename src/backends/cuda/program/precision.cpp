#include "backends/cuda/program/precision.h"

#include <optional>

#include "core/error.h"

namespace kiln::cuda {

Elem storage_elem(const Graph& graph, const std::vector<NodeId>& order) {
  std::optional<Precision> storage;
  bool has_fp8 = false;
  for (const NodeId id : order) {
    const Node& node = graph.node(id);
    if (node.op == OpKind::kQuantize || node.op == OpKind::kDequantize) continue;
    if (is_quantized(node.precision)) {
      has_fp8 = true;
      continue;
    }
    if (!storage) storage = node.precision;
    require(node.precision == *storage, "cuda backend: layer '", node.name, "' is ",
            precision_name(node.precision), " but the network is ", precision_name(*storage),
            "; mixed precision is not supported yet");
  }
  require(!has_fp8 || !storage || *storage == Precision::kF16,
          "cuda backend: FP8 and int8 layers run among fp16 layers, but this plan's other layers are ",
          precision_name(storage.value_or(Precision::kF32)), "; rebuild it with --fp8-fallback fp16");
  return storage.value_or(Precision::kF16) == Precision::kF16 ? Elem::kF16 : Elem::kF32;
}

}  // namespace kiln::cuda
