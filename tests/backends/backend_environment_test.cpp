// What backends report about their environment for study reports: oneDNN's version and ISA; the CUDA
// runtime, cuDNN and cuBLASLt versions always, and the GPU and driver where a device is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <regex>

#include "cuda_test_util.h"
#include "onednn_test_util.h"
#include "backends/backend.h"

namespace kiln {
namespace {

std::string fact(const std::vector<BackendFact>& facts, const std::string& key) {
  const auto it =
      std::find_if(facts.begin(), facts.end(), [&](const BackendFact& f) { return f.key == key; });
  return it == facts.end() ? "<missing>" : it->value;
}

bool is_version(const std::string& text) { return std::regex_search(text, std::regex("^[0-9]+\\.[0-9]+")); }

TEST(BackendEnvironment, OnednnNamesItsVersionAndIsa) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const auto facts = make_backend("cpu")->environment();
  EXPECT_TRUE(is_version(fact(facts, "onednn"))) << fact(facts, "onednn");
  EXPECT_NE(fact(facts, "onednn_isa"), "<missing>");
  EXPECT_TRUE(make_backend("cpu-reference")->environment().empty());
}

// A study on a shared CPU says how its threads waited: spinning ones make its timings swing widely.
TEST(BackendEnvironment, OnednnSaysHowOpenMpThreadsWait) {
  KILN_SKIP_WITHOUT_ONEDNN();
  const char* given = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = given != nullptr ? given : "";
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  EXPECT_EQ(fact(make_backend("cpu")->environment(), "openmp_wait"), "OMP_WAIT_POLICY=active");
  ::unsetenv("OMP_WAIT_POLICY");
  EXPECT_EQ(fact(make_backend("cpu")->environment(), "openmp_wait").rfind("spin, then sleep", 0), 0u);
  if (given != nullptr) ::setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
}

TEST(BackendEnvironment, CudaNamesItsLibrariesAndSaysWhenThereIsNoDevice) {
  if (!testing::cuda_built()) GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
  const auto facts = make_backend("cuda")->environment();
  for (const char* key : {"cuda_runtime", "cudnn", "cublaslt"}) {
    EXPECT_TRUE(is_version(fact(facts, key))) << key << ": " << fact(facts, key);
  }
  if (!testing::gpu_present()) {
    EXPECT_EQ(fact(facts, "gpu").rfind("none (no CUDA device", 0), 0u) << fact(facts, "gpu");
  }
}

TEST(BackendEnvironment, CudaNamesTheGpuAndDriver) {
  KILN_SKIP_WITHOUT_GPU();
  const auto facts = make_backend("cuda")->environment();
  const std::string gpu = fact(facts, "gpu");
  EXPECT_TRUE(std::regex_search(gpu, std::regex(R"(\(sm_[0-9]+, [0-9.]+ GiB, [0-9]+ SMs)"))) << gpu;
  EXPECT_TRUE(is_version(fact(facts, "gpu_driver"))) << fact(facts, "gpu_driver");
}

}  // namespace
}  // namespace kiln
