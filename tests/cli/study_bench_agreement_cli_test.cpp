// One timing method: a cuda study and `kiln bench` of the plan it wrote time the same region (device
// events around graph replays) and must agree. Needs a GPU: skipped (ctest's skip) without one.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "core/error.h"
#include "io/npy.h"
#include "study/child_timing.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kFamilies;
using testing::run_kiln;
using testing::Scratch;

nlohmann::json read_json(const fs::path& path) { return nlohmann::json::parse(std::ifstream(path)); }

// 2%: two `kiln bench` processes on one plan differed by at most 0.2% on the H200 (ResNet-50 fp16,
// 2026-12-03), and the study's engines timed in its own process differed by 6%: the bound tells the two
// apart with room for the machine's drift between the study and the bench.
TEST(StudyBenchAgreement, CudaStudyTimesAPlanAsKilnBenchDoes) {
  if (!fs::exists("/dev/nvidiactl")) GTEST_SKIP() << "no NVIDIA driver here: the cuda study needs a GPU";
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  const auto study =
      run_kiln("study " + (kFamilies / "timm_resnest").string() +
               " --backend cuda --variants fp32,fp16 --rounds 3 --seconds-per-round 1s -o " + out.string());
  if (study.output.find("unknown backend 'cuda'") != std::string::npos)
    GTEST_SKIP() << "the CUDA backend is not built";
  ASSERT_EQ(study.exit_code, 0) << study.output;
  const nlohmann::json report = read_json(out / "study.json");
  EXPECT_NE(report.at("timed_region").get<std::string>().find("kiln bench"), std::string::npos)
      << report.at("timed_region");
  for (const nlohmann::json& variant : report.at("variants")) {
    const fs::path plan = out / "plans" / variant.at("plan").get<std::string>();
    const fs::path json = scratch.dir() / "bench.json";
    const auto bench = run_kiln("bench " + plan.string() +
                                " --backend cuda --warmup 1s --duration 3s --json " + json.string());
    ASSERT_EQ(bench.exit_code, 0) << bench.output;
    const double studied = variant.at("latency_ms").at("median").get<double>();
    const double benched = read_json(json).at("latency").at("median_ms").get<double>();
    EXPECT_LE(std::abs(studied - benched) / benched, 0.02)
        << variant.at("name") << ": study " << studied << " ms, bench " << benched << " ms";
    EXPECT_GT(variant.at("end_to_end_ms").at("median").get<double>(), studied)
        << "the end-to-end time (copies included) is the longer";
  }
}

// The child's path on any machine: `kiln bench` run on a plan the CPU study wrote, its report read back.
TEST(StudyBenchAgreement, TimeInChildRunsKilnBenchAndReadsItsReport) {
  const Scratch scratch;
  const fs::path out = scratch.dir() / "study";
  const auto study = run_kiln("study " + (kFamilies / "timm_resnest").string() +
                              " --variants fp32,fp16 --rounds 1 --seconds-per-round 20ms -o " + out.string());
  ASSERT_EQ(study.exit_code, 0) << study.output;
  ChildTiming child;
  child.program = KILN_BINARY;
  child.scratch = std::make_shared<const ScratchFolder>("kiln-child-timing-test");
  child.backend = "cpu";
  const fs::path input = child.scratch->path() / "input.npy";
  write_npy(input, Tensor(DType::kF32, {2, 3, 32, 32}));
  BenchSettings settings;
  settings.warmup_seconds = 0;
  settings.duration_seconds = 0.05;
  settings.min_iterations = 3;
  const fs::path plan = out / "plans" / "fp16.kplan";
  const LatencyStats stats = time_in_child(child, plan, 2, input, settings, false).latency;
  EXPECT_GE(stats.iterations, 3);
  EXPECT_EQ(stats.runs, stats.iterations);  // host clock: one run per sample
  EXPECT_GT(stats.median_ms, 0.0);
  EXPECT_NEAR(stats.images_per_second, 2.0 * static_cast<double>(stats.runs) / stats.wall_seconds,
              1e-6 * stats.images_per_second);
  try {
    time_in_child(child, out / "plans" / "missing.kplan", 2, input, settings, false);
    ADD_FAILURE() << "a missing plan was timed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.kplan"), std::string::npos) << e.what();
  }
  // The CPU backend's timing already is whole runs on the host clock: --end-to-end is refused, by name.
  try {
    time_in_child(child, plan, 2, input, settings, true);
    ADD_FAILURE() << "--end-to-end was taken on the cpu backend";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--end-to-end"), std::string::npos) << e.what();
  }
  const fs::path folder = child.scratch->path();
  child.scratch.reset();
  EXPECT_FALSE(fs::exists(folder)) << "the scratch folder is removed with its last user";
}

}  // namespace
}  // namespace kiln
