// The committed timm golden models (tests/data/golden) on the oneDNN backend: built by their family,
// with and without the graph passes, against timm's float64 logits and against the reference backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "families/registry.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "io/timm_config.h"
#include "onednn_test_util.h"
#include "passes/pass_manager.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct Golden {
  fs::path dir;
  std::string family;
};

std::vector<Golden> goldens() {
  std::vector<Golden> found;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_TEST_DATA_DIR) / "golden")) {
    // timm classifier goldens only (the yolov10n detector golden has no logits; families_test checks it).
    if (!fs::exists(entry.path() / "model.safetensors") || !fs::exists(entry.path() / "logits.npy")) continue;
    // Folders are named after their family: resnest_* for timm_resnest, resnet_* for timm_resnet,
    // efficientnet_* for timm_efficientnet.
    const std::string name = entry.path().filename().string();
    found.push_back({entry.path(), "timm_" + name.substr(0, name.find('_'))});
  }
  return found;
}

Graph build(const Golden& golden, bool optimize) {
  const FamilyInfo& family = find_family(golden.family);
  const SafetensorsFile checkpoint = SafetensorsFile::open(golden.dir / "model.safetensors");
  const ModelConfig config = read_timm_config(golden.dir / "config.json", family.default_config);
  std::map<std::string, Tensor> weights;
  for (const auto& name : checkpoint.names()) weights.emplace(name, checkpoint.tensor(name));
  Graph graph = family.build(weights, config, -1);
  if (optimize) run_passes(graph);
  return graph;
}

// 1e-4 against timm's float64 logits, as tests/golden does for the reference path (fp32 through ~50
// layers lands near 1e-6..1e-5); kBackendTolerance against the reference backend on the same graph.
TEST(OnednnGoldenTest, MatchesTimmAndTheReference) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const auto found = goldens();
  ASSERT_GE(found.size(), 2u);
  for (const Golden& golden : found) {
    const Tensor input = read_npy(golden.dir / "input.npy");
    const Tensor timm = read_npy(golden.dir / "logits.npy").to(DType::kF32);
    for (const bool optimize : {true, false}) {
      SCOPED_TRACE(::testing::Message()
                   << golden.dir.filename().string() << (optimize ? " optimized" : " as built"));
      const Graph graph = build(golden, optimize);
      const Tensor ours = testing::run_on("cpu", graph, {input}).at(0);
      EXPECT_LE(testing::relative_difference(ours, timm), 1e-4);
      EXPECT_LE(testing::relative_difference(ours, testing::run_on("cpu-reference", graph, {input}).at(0)),
                testing::kBackendTolerance);
    }
  }
}

}  // namespace
}  // namespace kiln
