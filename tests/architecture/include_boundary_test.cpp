// The layer order of the source tree and the ownership boundaries between shared code, the application
// layers and the model families.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "include_boundaries.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

TEST(IncludeBoundaries, SourceTreeKeepsThem) {
  expect_no_violations(scan_include_boundaries(KILN_SOURCE_DIR), KILN_SOURCE_DIR);
}

TEST(IncludeBoundaries, SharedCodeIncludesNoFamily) {
  EXPECT_TRUE(include_violation("src/runtime/x.cpp", "families/registry.h"));
  EXPECT_TRUE(include_violation("src/graph/x.h", "families/common/layer_builder.h"));
  EXPECT_FALSE(include_violation("src/runtime/x.cpp", "graph/graph.h"));
}

TEST(IncludeBoundaries, ApplicationLayerIncludesTheRegistryOnly) {
  EXPECT_FALSE(include_violation("src/cli/cmd_validate.cpp", "families/registry.h"));
  EXPECT_FALSE(include_violation("src/pipeline/model_loading.h", "families/registry.h"));
  EXPECT_TRUE(include_violation("src/pipeline/detector_engine.cpp", "families/yolov10/letterbox.h"));
  EXPECT_TRUE(include_violation("src/cli/cmd_run.cpp", "families/timm_resnet/builder.h"));
  EXPECT_TRUE(include_violation("src/cli/cmd_run.cpp", "families/common/layer_builder.h"));
}

TEST(IncludeBoundaries, FamiliesIncludeThemselvesAndCommonOnly) {
  EXPECT_FALSE(include_violation("families/timm_resnet/builder.cpp", "families/common/resnet_skeleton.h"));
  EXPECT_FALSE(include_violation("families/timm_resnet/builder.cpp", "families/common/layer_builder.h"));
  EXPECT_FALSE(include_violation("families/timm_resnet/builder.cpp", "src/graph/graph.h"));
  EXPECT_FALSE(include_violation("families/timm_resnest/builder.cpp", "families/common/resnet_skeleton.h"));
  EXPECT_TRUE(include_violation("families/timm_resnest/builder.cpp", "families/timm_resnet/builder.h"));
  EXPECT_TRUE(include_violation("families/timm_resnest/builder.cpp", "families/registry.h"));
  EXPECT_TRUE(include_violation("families/common/layer_builder.cpp", "families/timm_resnet/builder.h"));
  EXPECT_FALSE(include_violation("families/common/layer_builder.cpp", "families/common/checkpoint_reader.h"));
}

TEST(IncludeBoundaries, RegistryAndTestsMayIncludeAnyFamily) {
  EXPECT_FALSE(include_violation("families/registry.cpp", "families/timm_resnest/builder.h"));
  EXPECT_FALSE(include_violation("tests/families/timm_resnet_test.cpp", "families/timm_resnet/builder.h"));
}

TEST(IncludeLayers, EveryLayerIsNamedOnceAndEverySourceFolderHasOne) {
  const auto& order = layer_order();
  for (std::size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(std::count(order.begin(), order.end(), order[i]), 1) << order[i];
  }
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "src")) {
    if (!entry.is_directory()) continue;
    const std::string folder = entry.path().filename().string();
    EXPECT_EQ(layer_of("src/" + folder + "/x.h"), folder);
    EXPECT_NE(std::find(order.begin(), order.end(), folder), order.end()) << "src/" << folder;
  }
}

TEST(IncludeLayers, ALowerLayerIncludingAHigherOneIsAViolation) {
  EXPECT_FALSE(include_violation("src/runtime/engine.cpp", "src/plan/plan.h"));
  EXPECT_FALSE(include_violation("src/cli/cmd_run.cpp", "src/pipeline/detector_engine.h"));
  EXPECT_FALSE(include_violation("src/sdk/detect.cpp", "families/registry.h"));
  EXPECT_FALSE(include_violation("src/sdk/detect.h", "src/pipeline/detector_engine.h"));
  EXPECT_TRUE(include_violation("src/pipeline/model_loading.cpp", "src/sdk/sdk_engine.h"));
  EXPECT_TRUE(include_violation("src/sdk/classify.cpp", "src/cli/commands.h"));
  EXPECT_TRUE(include_violation("src/graph/graph.h", "src/runtime/engine.h"));
  EXPECT_TRUE(include_violation("src/eval/metrics.cpp", "src/quant/fp8_build.h"));
  EXPECT_TRUE(include_violation("src/manifest/manifest.h", "src/study/study_spec.h"));
  EXPECT_TRUE(include_violation("src/study/study_runner.cpp", "src/pipeline/model_source.h"));
  EXPECT_TRUE(include_violation("src/pipeline/model_source.cpp", "src/cli/commands.h"));
  EXPECT_TRUE(include_violation("families/yolov10/postprocess.cpp", "src/pipeline/input_batch.h"));
  EXPECT_FALSE(include_violation("families/yolov10/postprocess.cpp", "src/eval/top_k.h"));
  EXPECT_EQ(include_violation("src/plan/plan.h", "src/runtime/engine.h"),
            "the plan layer must not include the runtime layer above it");
  EXPECT_EQ(include_violation("src/graph/x.h", "src/widgets/y.h"),
            "src/widgets is in no layer of the order (add it)");
}

TEST(IncludeLayers, BackendsAreOneLayerThatIncludesTheBackendInterface) {
  EXPECT_FALSE(include_violation("src/backends/cuda/program/program.h", "src/backends/backend.h"));
  EXPECT_FALSE(include_violation("src/backends/cuda/convolution/cudnn_conv.cpp",
                                 "src/backends/common/arena_planner.h"));
  EXPECT_FALSE(include_violation("src/backends/cpu/onednn/fallback_step.cpp", "src/reference/kernels.h"));
  EXPECT_FALSE(include_violation("src/backends/common/fusion_match.h", "src/passes/rewrite_util.h"));
  EXPECT_FALSE(include_violation("src/runtime/backend_registry.cpp", "src/backends/cuda/cuda_backend.h"));
  EXPECT_TRUE(include_violation("src/backends/cuda/program/program.cpp", "src/runtime/engine.h"));
}

// The cuda backend's rooms: kernels < tactics < convolution < program < the backend's own files.
TEST(IncludeLayers, TheCudaBackendsRoomsIncludeOnlyRoomsBelowThem) {
  EXPECT_FALSE(include_violation("src/backends/cuda/program/conv_steps.cpp",
                                 "src/backends/cuda/convolution/kiln_kernels.h"));
  EXPECT_FALSE(include_violation("src/backends/cuda/convolution/mma_conv.h",
                                 "src/backends/cuda/kernels/mma_conv_kernels.h"));
  EXPECT_FALSE(
      include_violation("src/backends/cuda/cuda_backend.cpp", "src/backends/cuda/program/program.h"));
  EXPECT_FALSE(include_violation("src/backends/cuda/kernels/layout.cu", "src/backends/cuda/cuda_util.h"));
  EXPECT_EQ(include_violation("src/backends/cuda/kernels/depthwise.cu",
                              "src/backends/cuda/convolution/conv_layer.h"),
            "the cuda backend's kernels room must not include its convolution room above it");
  EXPECT_TRUE(include_violation("src/backends/cuda/tactics/tactic.h", "src/backends/cuda/program/program.h"));
  EXPECT_TRUE(include_violation("src/backends/cuda/program/fusion.cpp", "src/backends/cuda/cuda_backend.h"));
  EXPECT_TRUE(include_violation("src/backends/cuda/cuda_util.h", "src/backends/cuda/kernels/kernel_types.h"));
  EXPECT_EQ(include_violation("src/backends/cuda/gadgets/x.h", "src/backends/cuda/kernels/kernel_types.h"),
            "src/backends/cuda/gadgets is in no room of the cuda backend's order (add it)");
}

// The reference kernels sit below the passes (constant folding runs them); the backends above both.
TEST(IncludeLayers, ReferenceKernelsAreBelowThePassesAndTheBackends) {
  EXPECT_EQ(layer_of("src/reference/kernels.h"), "reference");
  EXPECT_EQ(layer_of("src/reference/executor.cpp"), "reference");
  EXPECT_EQ(layer_of("src/backends/cpu/reference/reference_backend.cpp"), "backends");
  EXPECT_EQ(layer_of("src/backends/backend.h"), "backends");
  EXPECT_EQ(layer_of("src/runtime/engine.h"), "runtime");
  EXPECT_EQ(layer_of("tests/eval/metrics_test.cpp"), std::nullopt);
  EXPECT_FALSE(include_violation("src/passes/fold_constants.cpp", "src/reference/executor.h"));
  EXPECT_TRUE(
      include_violation("src/passes/fold_constants.cpp", "src/backends/cpu/reference/reference_backend.h"));
  EXPECT_TRUE(include_violation("src/reference/executor.cpp", "src/backends/backend.h"));
  EXPECT_TRUE(include_violation("src/reference/run_op.cpp", "src/passes/pass.h"));
}

TEST(IncludeLayers, BenchmarksAndTestSupportIncludeNoTest) {
  EXPECT_TRUE(include_violation("benchmarks/cpu_backend_bench.cpp", "tests/backends/resnest_like_graph.h"));
  EXPECT_TRUE(include_violation("testing/resnest_like_graph.h", "tests/backends/reference_test_util.h"));
  EXPECT_FALSE(include_violation("benchmarks/cpu_backend_bench.cpp", "testing/resnest_like_graph.h"));
  EXPECT_FALSE(include_violation("benchmarks/cpu_backend_bench.cpp", "families/registry.h"));
  EXPECT_FALSE(include_violation("tests/backends/onednn_network_test.cpp", "testing/resnest_like_graph.h"));
}

// A throwaway tree with one bad include of each kind, spelled the ways code spells them.
class IncludeScanOfATree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_include_scan_" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }

  fs::path root_;
};

TEST_F(IncludeScanOfATree, ReportsFileLineAndIncludeOfEachViolation) {
  write("families/registry.h", "#pragma once\n");
  write("families/registry.cpp", "#include \"families/registry.h\"\n#include \"families/a/builder.h\"\n");
  write("families/common/util.h", "#pragma once\n");
  write("families/a/builder.h", "#pragma once\n#include \"families/common/util.h\"\n");
  write("families/b/builder.cpp", "// b\n#include \"../a/builder.h\"\n");
  write("families/b/other.cpp", "#include <families/registry.h>\n");
  write("src/cli/main.cpp", "#include \"families/registry.h\"\n#include \"families/a/builder.h\"\n");
  write("src/core/x.cpp", "#include <vector>\n  #  include \"families/common/util.h\"\n");
  write("tests/a_test.cpp", "#include \"families/a/builder.h\"\n");

  const IncludeScan scan = scan_include_boundaries(root_);
  EXPECT_EQ(scan.files_scanned, 8);
  ASSERT_EQ(scan.violations.size(), 4u);
  EXPECT_EQ(scan.violations[0].file, "src/cli/main.cpp");
  EXPECT_EQ(scan.violations[0].line, 2);
  EXPECT_EQ(scan.violations[0].include_line, "#include \"families/a/builder.h\"");
  EXPECT_EQ(scan.violations[1].file, "src/core/x.cpp");
  EXPECT_EQ(scan.violations[1].line, 2);
  EXPECT_EQ(scan.violations[2].file, "families/b/builder.cpp");
  EXPECT_EQ(scan.violations[2].line, 2);
  EXPECT_EQ(scan.violations[2].reason,
            "families/b must not include families/a (share code through families/common)");
  EXPECT_EQ(scan.violations[3].file, "families/b/other.cpp");
}

TEST_F(IncludeScanOfATree, ReportsLayerBackEdgesAndBenchmarksReachingIntoTests) {
  write("src/runtime/engine.h", "#pragma once\n");
  write("src/backends/backend.h", "#pragma once\n");
  write("src/graph/graph.h",
        "#pragma once\n#include \"backends/backend.h\"\n#include \"runtime/engine.h\"\n");
  write("src/backends/cpu/kernels.h",
        "#pragma once\n#include \"backends/backend.h\"\n#include \"graph/graph.h\"\n");
  write("tests/backends/helper.h", "#pragma once\n");
  write("benchmarks/bench.cpp", "#include \"graph/graph.h\"\n#include \"helper.h\"\n");

  const IncludeScan scan = scan_include_boundaries(root_);
  EXPECT_EQ(scan.files_scanned, 5);
  ASSERT_EQ(scan.violations.size(), 3u);  // kernels.h may include the interface and the graph
  EXPECT_EQ(scan.violations[0].file, "src/graph/graph.h");
  EXPECT_EQ(scan.violations[0].line, 2);
  EXPECT_EQ(scan.violations[0].reason, "the graph layer must not include the backends layer above it");
  EXPECT_EQ(scan.violations[1].file, "src/graph/graph.h");
  EXPECT_EQ(scan.violations[1].line, 3);
  EXPECT_EQ(scan.violations[1].reason, "the graph layer must not include the runtime layer above it");
  EXPECT_EQ(scan.violations[2].file, "benchmarks/bench.cpp");
  EXPECT_EQ(scan.violations[2].line, 2);
}

}  // namespace
}  // namespace kiln::testing
