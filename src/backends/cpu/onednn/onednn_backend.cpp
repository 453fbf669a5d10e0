#include "backends/cpu/onednn/onednn_backend.h"

#include "backends/cpu/onednn/compiled_model.h"
#include "backends/cpu/onednn/plan_builder.h"
#include "backends/cpu/onednn/support.h"
#include "backends/cpu/onednn/thread_scope.h"

namespace kiln {
bool OnednnBackend::supports(const Graph& graph, const Node& node) const {
  return onednn::native_support(graph, node);
}

std::unique_ptr<CompiledModel> OnednnBackend::compile(const Graph& graph,
                                                      const CompileOptions& options) const {
  // Primitives size their work split by the thread count at creation: create them with the run's count.
  const onednn::ThreadScope threads(options.threads);
  onednn::PlanBuilder builder(graph, options);
  return std::make_unique<onednn::CompiledProgram>(graph, options, builder.build());
}

}  // namespace kiln
