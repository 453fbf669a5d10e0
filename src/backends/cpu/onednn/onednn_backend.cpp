#include "backends/cpu/onednn/onednn_backend.h"

#include <iomanip>

#include "backends/cpu/onednn/compiled_model.h"
#include "backends/cpu/onednn/onednn_isa.h"
#include "backends/cpu/onednn/program_builder.h"
#include "backends/cpu/onednn/support.h"
#include "backends/cpu/onednn/thread_scope.h"
#include "graph/multiply_adds.h"
#include "passes/fold_dequantized_weights.h"

namespace kiln {

bool OnednnBackend::supports(const Graph& graph, const Node& node) const {
  return onednn::native_support(graph, node);
}

std::unique_ptr<CompiledModel> OnednnBackend::compile(const Graph& graph,
                                                      const CompileOptions& options) const {
  // Primitives size their work split by the thread count at creation: create them with the run's count.
  const onednn::ThreadScope threads(options.threads);
  // FP8 weights become the f32 constants they dequantize to (this backend computes FP8 layers in f32);
  // int8 convolutions keep their codes and scales for oneDNN's int8 kernels. Where those kernels have no
  // int8 dot products (onednn_isa.h), int8 layers are simulated as FP8 ones are: f32 convolutions of the
  // quantize points' values over the dequantized weights, the same numbers as cpu-reference's.
  const bool int8_kernels = onednn::runs_int8();
  std::map<std::string, onednn::Int8Weights> int8_weights;
  if (int8_kernels) int8_weights = onednn::int8_conv_weights(graph);
  Graph lowered = graph;
  if (!int8_kernels) {
    for (std::size_t id = 0; id < lowered.nodes().size(); ++id) {
      Node& node = lowered.node(static_cast<NodeId>(id));
      if (node.precision == Precision::kI8) node.precision = Precision::kF32;
    }
  }
  if (!fold_dequantized_weights(lowered).empty()) lowered.compact();
  onednn::ProgramBuilder builder(lowered, options, std::move(int8_weights));
  return std::make_unique<onednn::CompiledProgram>(lowered, options, builder.build());
}

std::string OnednnBackend::precision_refusal(Precision precision) const {
  if (precision != Precision::kBf16 || onednn::runs_bf16()) return {};
  return cat("bf16 needs a CPU with AVX512-BF16 or AMX-BF16, and oneDNN's kernels here use ",
             onednn::isa_name(),
             " (build fp32 for this CPU, or run the plan on cpu-reference, which simulates bf16)");
}

std::optional<PrecisionAdvice> OnednnBackend::better_default(const Graph& graph, Precision requested) const {
  if (requested != Precision::kF16) return std::nullopt;
  // bf16 kernels about halve the convolutions' time on large images and many channels, but every
  // conversion between them and the f32 steps is a step of its own: bf16 lost to fp32 on the 32x32 demo
  // network (0.01 G multiply-adds) and won on ResNet-50 and ResNeSt-50d (4.1 and 5.4 G; the figures are
  // in docs/log/PERFORMANCE_LOG.md). Networks in between were not measured; 1 G splits the two.
  constexpr std::int64_t kBf16PaysFrom = 1'000'000'000;
  const std::int64_t work = multiply_adds_per_image(graph);
  const std::string size =
      cat(std::fixed, std::setprecision(2), static_cast<double>(work) / 1e9, " G multiply-adds per image");
  const std::string emulated = "not the manifest's fp16, which the cpu backend emulates on fp32 kernels";
  const std::string isa = cat("oneDNN ISA ", onednn::isa_name());
  if (!onednn::runs_bf16()) {
    return PrecisionAdvice{
        Precision::kF32,
        cat("fp32, ", emulated, " (slower than fp32); this CPU has no bf16 kernels (", isa, ")")};
  }
  if (work < kBf16PaysFrom) {
    return PrecisionAdvice{Precision::kF32,
                           cat("fp32, ", emulated, "; this CPU runs bf16 (", isa, "), but at ", size,
                               " bf16's conversions cost more than its kernels save "
                               "(it pays from 1 G)")};
  }
  return PrecisionAdvice{Precision::kBf16, cat("bf16, ", emulated, ": this CPU runs bf16 natively (", isa,
                                               ") and at ", size, " it pays (from 1 G)")};
}

}  // namespace kiln
