#include "backends/cpu/reference/reference_backend.h"

#include <chrono>

#include "reference/executor.h"
#include "core/error.h"

namespace kiln {

namespace {

class ReferenceModel final : public CompiledModel {
 public:
  ReferenceModel(const Graph& graph, const CompileOptions& options) : graph_(graph), options_(options) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    for (const Tensor& input : inputs) {
      require(input.rank() >= 1 && input.dim(0) == options_.batch, "this model was compiled for batch ",
              options_.batch, ", got input ", shape_str(input.shape()));
    }
    profile_.clear();
    if (!options_.profile) return run_reference(graph_, inputs);
    auto last = std::chrono::steady_clock::now();
    return run_reference(graph_, inputs, [&](const Node& node, const Tensor&) {
      const auto now = std::chrono::steady_clock::now();
      profile_.push_back({node.name, node.op, std::chrono::duration<double, std::milli>(now - last).count()});
      last = now;
    });
  }

  std::vector<LayerTime> last_profile() const override { return profile_; }

 private:
  Graph graph_;
  CompileOptions options_;
  std::vector<LayerTime> profile_;
};

}  // namespace

bool ReferenceBackend::supports(const Graph&, const Node&) const { return true; }

std::unique_ptr<CompiledModel> ReferenceBackend::compile(const Graph& graph,
                                                         const CompileOptions& options) const {
  return std::make_unique<ReferenceModel>(graph, options);
}

}  // namespace kiln
