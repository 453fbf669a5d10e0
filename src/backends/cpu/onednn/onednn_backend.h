// The fast CPU backend ("cpu"): convolutions, pooling, batch norm, element-wise ops and linear layers on
// oneDNN primitives in the blocked layouts oneDNN prefers, split attention on the backend's own kernels,
// activation memory placed once at compile time. Nodes it has no kernel for run on the reference
// kernels.
#pragma once

#include "backends/backend.h"

namespace kiln {

class OnednnBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  bool supports(const Graph& graph, const Node& node) const override;
  std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const override;
  std::vector<BackendFact> environment() const override;  // onednn_environment.cpp
  std::string precision_refusal(Precision precision) const override;
  // fp16 here is emulated on fp32 kernels (slower than fp32): bf16 where the CPU runs it and the network
  // is large enough for bf16's kernels to pay, else fp32.
  std::optional<PrecisionAdvice> better_default(const Graph& graph, Precision requested) const override;
};

}  // namespace kiln
