// The reference backend: every operator, node by node, on the reference kernels. Slow and exact.
#pragma once

#include "backends/backend.h"

namespace kiln {

class ReferenceBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu-reference"; }
  bool supports(const Graph& graph, const Node& node) const override;
  std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const override;
  // It simulates every precision exactly, bf16 included, on any CPU.
  std::string precision_refusal(Precision) const override { return {}; }
};

}  // namespace kiln
