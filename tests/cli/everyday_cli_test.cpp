// What a first run meets: OpenMP threads that sleep rather than spin beside other work, a benchmark
// that says when the machine was loaded, and output paths checked before any work.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "cli_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kTiny;
using testing::run_kiln;
using testing::run_shell;
using testing::Scratch;

const std::string kKiln = KILN_BINARY;

// libgomp, asked to show its settings, prints the spin count it took when the program was loaded: 0 for
// passive waits, 300000 when the policy is unset (which it also displays as PASSIVE), more when active.
// kiln chooses one of the first two from the machine's work at start (src/sdk/wait_choice.h), and keeps
// the user's choice.
TEST(Everyday, OpenMpThreadsNeverSpinEndlesslyUnlessTheUserChose) {
  const auto by_default =
      run_shell("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose " + kKiln + " --version");
  ASSERT_EQ(by_default.exit_code, 0) << by_default.output;
  const bool passive = by_default.output.find("GOMP_SPINCOUNT = '0'") != std::string::npos;
  const bool spin_then_sleep = by_default.output.find("GOMP_SPINCOUNT = '300000'") != std::string::npos;
  EXPECT_TRUE(passive || spin_then_sleep) << by_default.output;
  const auto chosen = run_shell("env OMP_WAIT_POLICY=active OMP_DISPLAY_ENV=verbose " + kKiln + " --version");
  EXPECT_NE(chosen.output.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << chosen.output;
  const auto spin =
      run_shell("env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=1000 OMP_DISPLAY_ENV=verbose " + kKiln + " --version");
  EXPECT_NE(spin.output.find("GOMP_SPINCOUNT = '1000'"), std::string::npos) << spin.output;
}

// How the threads waited, and why, is in bench's report and on its terminal: the figures depend on it.
TEST(Everyday, BenchRecordsHowOpenMpThreadsWaitedAndWhy) {
  const Scratch scratch;
  const std::string plan = (scratch.dir() / "tiny.kplan").string();
  const auto built = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                              (kTiny / "model.safetensors").string() + " -o " + plan);
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const std::string bench = " bench " + plan + " --warmup 10ms --duration 100ms --json ";
  const auto by_default = run_shell("env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + kKiln + bench +
                                    (scratch.dir() / "a.json").string());
  ASSERT_EQ(by_default.exit_code, 0) << by_default.output;
  EXPECT_NE(by_default.output.find("OpenMP threads waiting: "), std::string::npos) << by_default.output;
  const nlohmann::json made = nlohmann::json::parse(testing::bytes_of(scratch.dir() / "a.json"));
  const std::string waits = made.at("environment").at("openmp_wait").get<std::string>();
  EXPECT_NE(waits.find("chosen at start: "), std::string::npos) << waits;
  EXPECT_NE(waits.find("ready to run on "), std::string::npos) << waits;
  const auto users = run_shell("env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive " + kKiln + bench +
                               (scratch.dir() / "b.json").string());
  ASSERT_EQ(users.exit_code, 0) << users.output;
  const nlohmann::json kept = nlohmann::json::parse(testing::bytes_of(scratch.dir() / "b.json"));
  EXPECT_EQ(kept.at("environment").at("openmp_wait").get<std::string>(),
            "OMP_WAIT_POLICY=passive (the user's choice)");
}

TEST(Everyday, OutputPathsAreCheckedBeforeAnyWork) {
  const Scratch scratch;
  const std::string missing = (scratch.dir() / "nodir").string();
  const std::string tiny = (kTiny / "model.safetensors").string();
  // bench would time for seconds before writing its report; build would build the whole plan.
  const auto bench = run_kiln("bench " + tiny + " --json " + missing + "/b.json");
  expect_one_line_error(bench, "--json " + missing + "/b.json: folder '" + missing + "' does not exist");
  EXPECT_EQ(bench.exit_code, 2) << "a usage error";
  const auto build = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " + tiny +
                              " -o " + missing + "/m.kplan");
  expect_one_line_error(build, "-o " + missing + "/m.kplan: folder");
  EXPECT_EQ(build.exit_code, 2);
  const auto inspect = run_kiln("inspect " + tiny + " --json " + missing + "/i.json");
  expect_one_line_error(inspect, "--json " + missing + "/i.json: folder");
  EXPECT_EQ(inspect.exit_code, 2);
  const auto folder = run_kiln("bench " + tiny + " --json " + scratch.dir().string());
  expect_one_line_error(folder, "names a folder");
  EXPECT_EQ(folder.exit_code, 2);
}

// Busy processes on every hardware thread: the benchmark says the machine was loaded, in the terminal
// and in its JSON, with the medians of its rounds.
TEST(Everyday, BenchSaysWhenTheMachineWasLoaded) {
  const Scratch scratch;
  const fs::path plan = scratch.dir() / "tiny.kplan";
  const auto built = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                              (kTiny / "model.safetensors").string() + " -o " + plan.string());
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const fs::path json = scratch.dir() / "bench.json";
  const std::string bench =
      kKiln + " bench " + plan.string() + " --warmup 0s --duration 300ms --json " + json.string();
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const auto loaded = run_shell("pids=''; for i in $(seq " + std::to_string(threads) +
                                "); do sh -c 'while :; do :; done' & pids=\"$pids $!\"; done; sleep 0.5; " +
                                bench + " 2>&1; status=$?; kill $pids; exit $status");
  ASSERT_EQ(loaded.exit_code, 0) << loaded.output;
  EXPECT_NE(loaded.output.find("kiln: warning: the machine was loaded"), std::string::npos) << loaded.output;
  EXPECT_NE(loaded.output.find("time it on an idle machine"), std::string::npos) << loaded.output;
  std::ifstream in(json);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_TRUE(report["warnings"].is_array());
  ASSERT_FALSE(report["warnings"].empty());
  EXPECT_NE(report["warnings"][0].get<std::string>().find("loaded"), std::string::npos);
  EXPECT_FALSE(report["round_medians_ms"].empty());
  EXPECT_TRUE(report["outliers"].is_array());
}

}  // namespace
}  // namespace kiln
