#include "backends/cpu/onednn/onednn_backend.h"

#include "backends/cpu/onednn/compiled_model.h"
#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/support.h"
#include "backends/cpu/onednn/thread_scope.h"
#include "passes/fold_dequantized_weights.h"

namespace kiln {

bool OnednnBackend::supports(const Graph& graph, const Node& node) const {
  return onednn::native_support(graph, node);
}

std::unique_ptr<CompiledModel> OnednnBackend::compile(const Graph& graph,
                                                      const CompileOptions& options) const {
  // Primitives size their work split by the thread count at creation: create them with the run's count.
  const onednn::ThreadScope threads(options.threads);
  // This backend computes in f32: FP8 weights become the f32 constants they dequantize to.
  Graph lowered = graph;
  if (!fold_dequantized_weights(lowered).empty()) lowered.compact();
  onednn::ProgramBuilder builder(lowered, options);
  return std::make_unique<onednn::CompiledProgram>(lowered, options, builder.build());
}

}  // namespace kiln
