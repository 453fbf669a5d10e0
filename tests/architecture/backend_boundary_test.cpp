// Everything GPU-specific behind the Backend interface: no backend headers, name checks or KILN_HAVE_CUDA
// blocks above the backends (backend_boundaries.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "backend_boundaries.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

TEST(BackendBoundaries, SourceTreeKeepsThem) {
  expect_no_violations(scan_backend_boundaries(KILN_SOURCE_DIR), KILN_SOURCE_DIR);
}

// Lines as they stood before the capabilities moved behind the interface.
TEST(BackendBoundaries, ABackendHeaderAboveTheBackendsIsAViolation) {
  EXPECT_TRUE(
      backend_violation("src/pipeline/device_letterbox_run.cpp", "#include \"backends/cuda/cuda_util.h\""));
  EXPECT_TRUE(backend_violation("src/sdk/device_images.cpp", "#include <backends/cuda/device_preprocess.h>"));
  EXPECT_TRUE(backend_violation("python/module.cpp", "#include \"backends/cpu/onednn/onednn_backend.h\""));
  EXPECT_TRUE(backend_violation("families/yolov10/x.h", "#include \"backends/common/arena_planner.h\""));
  EXPECT_FALSE(backend_violation("src/runtime/engine.h", "#include \"backends/backend.h\""));
  EXPECT_FALSE(backend_violation("src/runtime/backend_registry.cpp",
                                 "#include \"backends/cpu/onednn/onednn_backend.h\""));
  EXPECT_FALSE(backend_violation("src/backends/cuda/convolution/cudnn_conv.cpp",
                                 "#include \"backends/cuda/cuda_util.h\""));
}

TEST(BackendBoundaries, ABackendNameCheckIsAViolation) {
  EXPECT_TRUE(backend_violation("src/cli/memory_check.cpp", "  if (backend == \"cuda\") return;"));
  EXPECT_TRUE(
      backend_violation("src/sdk/c_api_engine.cpp", "if (handle.context.engine().backend() != \"cuda\") {"));
  EXPECT_TRUE(backend_violation("src/cli/x.cpp", "if (\"cpu\" == name)"));
  EXPECT_FALSE(backend_violation("src/cli/x.cpp", "options.backend = \"cuda\";"));
  EXPECT_FALSE(backend_violation("src/runtime/backend_registry.cpp", "  if (name == \"cuda\") return x;"));
}

TEST(BackendBoundaries, ACudaBuildBlockAboveTheBackendsIsAViolation) {
  EXPECT_TRUE(backend_violation("src/sdk/sdk_engine.cpp", "#if KILN_HAVE_CUDA"));
  EXPECT_TRUE(backend_violation("python/py_arrays.cpp", "#ifdef KILN_HAVE_CUDA"));
  EXPECT_FALSE(backend_violation("src/backends/cuda/cuda_backend.cpp", "#if KILN_HAVE_CUDA"));
  EXPECT_TRUE(backend_violation("src/runtime/backend_registry.cpp", "#if KILN_HAVE_CUDA"));
  EXPECT_TRUE(backend_violation("src/backends/cpu/onednn/conv.cpp", "#if KILN_HAVE_CUDA"));
}

TEST(BackendBoundaries, OnlyThePluginIncludesTheCudaBackend) {
  EXPECT_TRUE(
      backend_violation("src/runtime/backend_registry.cpp", "#include \"backends/cuda/cuda_backend.h\""));
  EXPECT_TRUE(backend_violation("src/backends/common/arena_planner.cpp",
                                "#include \"backends/cuda/program/arena.h\""));
  EXPECT_FALSE(backend_violation("src/backends/cuda/convolution/cudnn_conv.cpp",
                                 "#include \"backends/cuda/convolution/cudnn_conv.h\""));
  EXPECT_FALSE(backend_violation("src/runtime/backend_registry.cpp",
                                 "#include \"backends/cpu/reference/reference_backend.h\""));
}

TEST(BackendBoundaries, ScanReportsFileAndLineAndSkipsTests) {
  const fs::path root = fs::temp_directory_path() / ("kiln_backend_scan_" + std::to_string(getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "src/sdk");
  fs::create_directories(root / "tests/sdk");
  std::ofstream(root / "src/sdk/engine.cpp") << "// engine\n#if KILN_HAVE_CUDA\n#endif\n";
  std::ofstream(root / "tests/sdk/engine_test.cpp") << "#include \"backends/cuda/cuda_util.h\"\n";
  const IncludeScan scan = scan_backend_boundaries(root);
  fs::remove_all(root);
  EXPECT_EQ(scan.files_scanned, 1);
  ASSERT_EQ(scan.violations.size(), 1u);
  EXPECT_EQ(scan.violations[0].file, "src/sdk/engine.cpp");
  EXPECT_EQ(scan.violations[0].line, 2);
}

}  // namespace
}  // namespace kiln::testing
