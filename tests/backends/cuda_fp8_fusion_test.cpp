// FP8 networks on the CUDA backend with their quantize points fused into the producers of the tensors
// they read (src/backends/cuda/program/quantize_fusion.h): no quantize step is left, and the outputs are bit
// for bit those of the program that quantizes in steps of its own (fuse-quantize=off) running
// the same tactics. Skips without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>

#include "core/error.h"
#include "cuda_test_util.h"
#include "fp8_graph_util.h"
#include "onednn_test_util.h"
#include "testing/resnest_like_graph.h"

namespace kiln {
namespace {

// A ResNeSt of one block per stage with every convolution but the first (3 input channels) in FP8;
// `fused` false keeps batch norms and ReLUs as nodes of their own (activations produce the codes).
Graph fp8_resnest(bool fused) {
  testing::ResnestLikeOptions o;
  std::tie(o.image, o.stem_width, o.base_width, o.classes) = std::make_tuple(64, 16, 16, 10);
  o.depths = {1, 1, 1, 1};
  o.fused = fused;
  Graph graph = testing::resnest_like_graph(o);
  testing::to_fp8_network(graph, testing::all_but_first_convolution(graph));
  return graph;
}

// Steps whose label is exactly the standalone quantize step's, and steps writing codes themselves.
struct QuantizeSteps {
  std::size_t standalone = 0, fused = 0;
};
QuantizeSteps quantize_steps(const std::string& describe) {
  QuantizeSteps q;
  std::istringstream lines(describe);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string label = line.substr(colon + 2);
    if (label == "quantize to E4M3") ++q.standalone;
    if (label.find(" + quantize to E4M3") != std::string::npos) ++q.fused;
  }
  return q;
}

std::size_t quantize_points(const Graph& graph) {
  std::size_t count = 0;
  for (const NodeId id : graph.topological_order()) count += graph.node(id).op == OpKind::kQuantize ? 1 : 0;
  return count;
}

// A layer writing codes keys its cuDNN graph tactics "...:e4m3..."; without the fusion the same layer
// takes the same tactic under the key without that part.
std::map<std::string, nlohmann::json> without_codes(std::map<std::string, nlohmann::json> layer_data) {
  for (auto& [layer, entry] : layer_data) {
    std::string key = entry["tactic"]["key"].get<std::string>();
    // ":e4m3" may be followed by other parts (":engines1" below opt level 3).
    if (const auto at = key.find(":e4m3"); at != std::string::npos) key.erase(at, 5);
    // A layer that ran a tactic followed by the quantize kernel runs that tactic alone without codes.
    const std::string then_quantize = "+quantize-kernel";
    if (key.ends_with(then_quantize)) key.resize(key.size() - then_quantize.size());
    entry["tactic"]["key"] = key;
  }
  return layer_data;
}

// Compiles with fuse-quantize=off for the program quantizing in steps of its own. Both without cuBLASLt's
// FP8 GEMM (fp8-gemm=off), so that every FP8 convolution of either program runs on cuDNN's or kiln's
// kernels, whose epilogues are the ones compared.
std::unique_ptr<CompiledModel> compile(const Graph& graph, CompileOptions options, bool fuse) {
  options.backend_options = {{"fuse-quantize", fuse ? "on" : "off"}, {"fp8-gemm", "off"}};
  return make_backend("cuda")->compile(graph, options);
}

TEST(CudaFp8FusionTest, ProducersWriteTheCodesBitForBit) {
  KILN_SKIP_WITHOUT_GPU();
  const Tensor x = testing::random_tensor({2, 3, 64, 64}, 23);
  for (const bool fused_graph : {true, false}) {
    const Graph graph = fp8_resnest(fused_graph);
    const std::size_t points = quantize_points(graph);
    ASSERT_GE(points, 10u);
    for (const std::int64_t opt_level : {0, 1}) {
      SCOPED_TRACE(cat(fused_graph ? "fused" : "unfused", " graph, opt level ", opt_level));
      CompileOptions options;
      options.opt_level = opt_level;
      options.batch = 2;
      const auto fused = compile(graph, options, true);
      const std::string steps = fused->describe();
      // Every quantize point reads a tensor one of kiln's epilogues produces: none has a step.
      EXPECT_EQ(quantize_steps(steps).standalone, 0u) << steps;
      EXPECT_GE(quantize_steps(steps).fused, 1u) << steps;
      // The same tactics, quantizing in steps of their own.
      options.layer_data = without_codes(fused->layer_data());
      const auto unfused = compile(graph, options, false);
      const std::string unfused_steps = unfused->describe();
      EXPECT_EQ(quantize_steps(unfused_steps).standalone, points) << unfused_steps;
      EXPECT_EQ(quantize_steps(unfused_steps).fused, 0u) << unfused_steps;
      EXPECT_EQ(unfused_steps.find("stored for another GPU"), std::string::npos) << unfused_steps;
      const Tensor a = fused->run({x}).front(), b = unfused->run({x}).front();
      ASSERT_EQ(a.shape(), b.shape());
      // A cuDNN engine accumulating with atomics may differ from run to run; then only the FP8
      // tolerance of the network applies (a wrong code, scale or buffer is O(1)).
      const Tensor again = fused->run({x}).front();
      if (testing::relative_difference(again, a) > 0.0) {
        EXPECT_LE(testing::relative_difference(b, a), 0.1) << "the fused program varies from run to run";
        continue;
      }
      for (std::size_t i = 0; i < a.f32().size(); ++i) ASSERT_EQ(a.f32()[i], b.f32()[i]) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace kiln
