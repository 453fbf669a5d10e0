#include "backends/cpu/onednn/onednn_backend.h"

#include "backends/cpu/onednn/compiled_model.h"
#include "backends/cpu/onednn/plan_builder.h"
#include "backends/cpu/onednn/support.h"
#include "backends/cpu/onednn/thread_scope.h"
#include "backends/cpu/reference/kernels.h"

namespace kiln {
namespace {

// FP8 weights arrive as E4M3 codes behind a kDequantize; this backend computes in fp32, so each such
// node becomes the constant it always computes (codes x scales in f32, as the reference kernel does).
Graph with_weights_dequantized(const Graph& graph) {
  Graph lowered = graph;
  bool changed = false;
  for (std::size_t id = 0; id < lowered.nodes().size(); ++id) {
    Node& node = lowered.node(static_cast<NodeId>(id));
    if (node.dead || node.op != OpKind::kDequantize) continue;
    const Value& codes = lowered.value(node.inputs[0]);
    const Value& scales = lowered.value(node.inputs[1]);
    if (!codes.is_constant() || !scales.is_constant()) continue;
    Tensor weights = reference::dequantize(codes.constant, scales.constant);
    Value& output = lowered.value(node.output);
    output.constant = std::move(weights);
    output.dtype = DType::kF32;
    output.producer = kNoNode;
    node.dead = true;
    changed = true;
  }
  if (changed) lowered.compact();
  return lowered;
}

}  // namespace

bool OnednnBackend::supports(const Graph& graph, const Node& node) const {
  return onednn::native_support(graph, node);
}

std::unique_ptr<CompiledModel> OnednnBackend::compile(const Graph& graph,
                                                      const CompileOptions& options) const {
  // Primitives size their work split by the thread count at creation: create them with the run's count.
  const onednn::ThreadScope threads(options.threads);
  const Graph lowered = with_weights_dequantized(graph);
  onednn::PlanBuilder builder(lowered, options);
  return std::make_unique<onednn::CompiledProgram>(lowered, options, builder.build());
}

}  // namespace kiln
