#include "runtime/engine.h"

#include <algorithm>

#include "core/error.h"
#include "graph/precision_assignment.h"
#include "runtime/partitioned_model.h"

namespace kiln {

std::string default_backend() { return std::string(backend_names().front()); }

namespace {

// A plan whose layers are in a precision the backend cannot run here is refused in one line, before
// any compile: running them in another precision would give other numbers than the plan promises.
void require_precisions_run(const Graph& graph, const Backend& backend) {
  std::vector<Precision> checked;
  for (const Node& node : graph.nodes()) {
    if (node.dead || std::find(checked.begin(), checked.end(), node.precision) != checked.end()) continue;
    checked.push_back(node.precision);
    const std::string refusal = backend.precision_refusal(node.precision);
    require(refusal.empty(), "this plan's layers are ", precision_name(node.precision), " and the ",
            backend.name(), " backend cannot run them: ", refusal);
  }
}

}  // namespace

Engine::Engine(std::shared_ptr<const Plan> plan, const std::string& backend, const CompileOptions& options)
    : Engine(std::move(plan), *make_backend(backend), *make_backend(default_backend()), options) {}

Engine::Engine(std::shared_ptr<const Plan> plan, const Backend& backend, const Backend& fallback,
               const CompileOptions& options)
    : plan_(std::move(plan)), backend_(backend.name()), fallback_(fallback.name()), options_(options) {
  require_precisions_run(plan_->graph, backend);
  Graph graph = plan_->graph;
  widen_constants_to_f32(graph);
  if (options_.opt_level < 0) options_.opt_level = plan_->info.opt_level;
  if (options_.layer_data.empty() && plan_->info.backend == backend_)
    options_.layer_data = plan_->info.layer_data;
  // A plan runs with the options it was built with, on the backend it was built for.
  if (options_.backend_options.empty() && plan_->info.backend == backend_)
    options_.backend_options = plan_->info.backend_options;
  FallbackCompile compiled = compile_with_fallback(graph, backend, fallback, options_);
  compiled_ = std::move(compiled.model);
  fallback_layers_ = std::move(compiled.fallback_layers);
}

std::vector<Tensor> Engine::run(const Tensor& input) {
  require(input.rank() == 4 && input.dim(0) == options_.batch, "this engine runs batches of ", options_.batch,
          " images, got an input of shape ", shape_str(input.shape()));
  return compiled_->run({input});
}

void Engine::run_device(const std::vector<const void*>& inputs, const std::vector<void*>& outputs,
                        void* stream) {
  if (!fallback_layers_.empty()) {
    fail("device buffers need every layer on ", backend_, ", but ", fallback_layers_.size(),
         " run on the CPU fallback (the first: ", fallback_layers_.front(), ")");
  }
  compiled_->run_device(inputs, outputs, stream);
}

std::string fallback_warning(const std::vector<std::string>& layers, std::string_view backend,
                             std::string_view fallback) {
  if (layers.empty()) return {};
  constexpr std::size_t kNamed = 8;
  std::string names;
  for (std::size_t i = 0; i < layers.size() && i < kNamed; ++i) names += cat(i ? ", " : "", layers[i]);
  if (layers.size() > kNamed) names += cat(" and ", layers.size() - kNamed, " more");
  return cat("kiln: warning: ", layers.size(), layers.size() == 1 ? " layer runs" : " layers run", " on ",
             fallback, ", not ", backend, ": ", names, " (use --strict-backend to refuse)");
}

std::string fallback_warning(const Engine& engine) {
  return fallback_warning(engine.fallback_layers(), engine.backend(), engine.fallback_backend());
}

}  // namespace kiln
