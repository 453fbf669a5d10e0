// A compiled graph: runs its steps in order on one oneDNN stream.
#pragma once

#include "backends/cpu/onednn/program_builder.h"
#include "backends/backend.h"

namespace kiln::onednn {

class CompiledProgram final : public CompiledModel {
 public:
  CompiledProgram(const Graph& graph, const CompileOptions& options, Program program);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::vector<LayerTime> last_profile() const override { return profile_; }

  std::size_t arena_bytes() const { return program_.workspace->arena_bytes(); }
  // One line per step: the layer it is reported under and what runs.
  std::string describe() const override;

 private:
  CompileOptions options_;
  Program program_;
  dnnl::stream stream_;
  std::vector<std::string> node_names_;
  std::vector<OpKind> node_ops_;
  std::vector<LayerTime> profile_;
};

}  // namespace kiln::onednn
