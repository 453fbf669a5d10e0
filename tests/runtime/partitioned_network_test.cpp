// A whole network partitioned: the golden tiny EfficientNet, whose squeeze-excite scales a backend here
// refuses, so every block's gate hands its output to the CPU fallback and back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/reference/reference_backend.h"
#include "families/registry.h"
#include "graph/precision_assignment.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "passes/pass_manager.h"
#include "picky_backend.h"
#include "runtime/partitioned_model.h"

namespace kiln {
namespace {

using testing::PickyBackend;
using testing::refuse_op;

const std::filesystem::path kGolden =
    std::filesystem::path(KILN_TEST_DATA_DIR) / "golden" / "efficientnet_tiny";

Graph efficientnet_tiny() {
  const FamilyInfo& family = find_family("timm_efficientnet");
  const SafetensorsFile file = SafetensorsFile::open(kGolden / "model.safetensors");
  std::map<std::string, Tensor> weights;
  for (const auto& name : file.names()) weights.emplace(name, file.tensor(name).to(DType::kF32));
  Graph graph = family.build(weights, read_timm_config(kGolden / "config.json", family.default_config), -1);
  run_passes(graph);
  return graph;
}

double relative_difference(const Tensor& y, const Tensor& ref) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ref.f32().size(); ++i) {
    diff += std::pow(double{y.f32()[i]} - ref.f32()[i], 2);
    norm += std::pow(double{ref.f32()[i]}, 2);
  }
  return std::sqrt(diff / norm);
}

class PartitionedNetworkTest : public ::testing::TestWithParam<bool> {};  // parameter: fp16

// On the reference kernels a partitioned run is the whole graph's run, bit for bit: the values crossing
// between segments are exactly the tensors the whole run hands from node to node.
TEST_P(PartitionedNetworkTest, EfficientNetWithGatesOnTheFallbackIsExact) {
  Graph graph = efficientnet_tiny();
  if (GetParam()) {
    assign_precision(graph, Precision::kF16);
    widen_constants_to_f32(graph);
  }
  const PickyBackend backend(refuse_op(OpKind::kChannelScale));
  const ReferenceBackend reference;
  const Tensor x = read_npy(kGolden / "input.npy");
  CompileOptions options;
  options.batch = x.dim(0);
  const FallbackCompile compiled = compile_with_fallback(graph, backend, reference, options);
  const auto scales = std::count_if(graph.nodes().begin(), graph.nodes().end(),
                                    [](const Node& n) { return !n.dead && n.op == OpKind::kChannelScale; });
  ASSERT_GT(scales, 4);
  EXPECT_EQ(compiled.fallback_layers.size(), static_cast<std::size_t>(scales));
  EXPECT_EQ(backend.compiled_node_counts.size(), static_cast<std::size_t>(scales) + 1);
  const Tensor ours = compiled.model->run({x}).front();
  const Tensor whole = reference.compile(graph, options)->run({x}).front();
  ASSERT_EQ(ours.shape(), whole.shape());
  EXPECT_TRUE(std::equal(ours.f32().begin(), ours.f32().end(), whole.f32().begin()));
}

// On the oneDNN backend (when built), partitioned around the gates, within the fp32 bar of its own
// network tests: a layout mistake at a segment boundary would be O(1).
TEST_P(PartitionedNetworkTest, EfficientNetOnOneDnnWithGatesOnTheFallback) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), "cpu") == names.end()) GTEST_SKIP() << "oneDNN is not built";
  Graph graph = efficientnet_tiny();
  if (GetParam()) {
    assign_precision(graph, Precision::kF16);
    widen_constants_to_f32(graph);
  }
  const PickyBackend backend(refuse_op(OpKind::kChannelScale), "cpu");
  const Tensor x = read_npy(kGolden / "input.npy");
  CompileOptions options;
  options.batch = x.dim(0);
  const FallbackCompile compiled = compile_with_fallback(graph, backend, ReferenceBackend(), options);
  ASSERT_FALSE(compiled.fallback_layers.empty());
  const Tensor ours = compiled.model->run({x}).front();
  const Tensor ref = ReferenceBackend().compile(graph, options)->run({x}).front();
  // fp16: both sides round the same activations to fp16; where an fp32 result straddles a rounding
  // boundary they land one fp16 step apart, which compounds over the depth: a few 1e-3 at most.
  EXPECT_LE(relative_difference(ours, ref), GetParam() ? 5e-3 : 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Precisions, PartitionedNetworkTest, ::testing::Bool(),
                         [](const auto& param_info) { return param_info.param ? "fp16" : "fp32"; });

}  // namespace
}  // namespace kiln
