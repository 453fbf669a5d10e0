#include "runtime/engine.h"

#include "builder/precision.h"
#include "core/error.h"

namespace kiln {

std::string default_backend() { return std::string(backend_names().front()); }

Engine::Engine(std::shared_ptr<const Plan> plan, const std::string& backend, const CompileOptions& options)
    : plan_(std::move(plan)), backend_(backend), options_(options) {
  Graph graph = plan_->graph;
  widen_constants_to_f32(graph);
  if (options_.opt_level < 0) options_.opt_level = plan_->info.opt_level;
  if (options_.layer_data.empty() && plan_->info.backend == backend_) options_.layer_data = plan_->info.layer_data;
  compiled_ = make_backend(backend_)->compile(graph, options_);
}

std::vector<Tensor> Engine::run(const Tensor& input) {
  require(input.rank() == 4 && input.dim(0) == options_.batch, "this engine runs batches of ", options_.batch,
          " images, got an input of shape ", shape_str(input.shape()));
  return compiled_->run({input});
}

}  // namespace kiln
