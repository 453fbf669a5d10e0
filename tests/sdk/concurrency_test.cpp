// One engine, eight threads each running its own context on the same inputs several times: every result
// is bit-identical to a serial run of the same engine (kiln.hpp over libkiln.so alone). The tsan preset
// runs this under ThreadSanitizer (docs/API.md, Threads).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "kiln/kiln.hpp"
#include "read_all.h"

namespace {

namespace fs = std::filesystem;
namespace ks = kiln::sdk;

const fs::path kFixture = KILN_SDK_FIXTURE_DIR;
constexpr std::size_t kThreads = 8;
constexpr std::size_t kRunsPerThread = 3;

// Two different batches, so that a context reading another's activations would show.
std::vector<std::vector<float>> inputs() {
  std::vector<float> first = read_all<float>(kFixture / "input.f32");
  std::vector<float> second = first;
  for (std::size_t i = 0; i < second.size(); ++i) second[i] = 0.5f * second[(i * 7919) % second.size()];
  return {first, second};
}

bool has_backend(const std::string& backend) {
  ks::EngineOptions options;
  options.backend = backend;
  try {
    ks::Engine(ks::Plan::load(kFixture / "plan.kplan"), options);
    return true;
  } catch (const ks::Error& error) {
    if (error.status() == KILN_STATUS_UNSUPPORTED) return false;
    throw;
  }
}

void expect_threads_match_serial(const std::string& backend) {
  ks::EngineOptions options;
  options.backend = backend;
  options.batch = 2;
  const ks::Engine engine(ks::Plan::load(kFixture / "plan.kplan"), options);
  const auto batches = inputs();
  std::vector<std::vector<float>> serial;
  {
    ks::Context context = engine.context();
    for (const auto& batch : batches) serial.push_back(context.run(batch).at(0));
  }
  ASSERT_NE(serial[0], serial[1]);
  // results[thread][run]: each thread starts on another batch and alternates.
  std::vector<std::vector<std::vector<float>>> results(kThreads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&engine, &batches, &result = results[t], t] {
      ks::Context context = engine.context();
      for (std::size_t run = 0; run < kRunsPerThread; ++run)
        result.push_back(context.run(batches[(t + run) % batches.size()]).at(0));
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 0; t < kThreads; ++t) {
    ASSERT_EQ(results[t].size(), kRunsPerThread);
    for (std::size_t run = 0; run < kRunsPerThread; ++run) {
      const auto& expected = serial[(t + run) % batches.size()];
      ASSERT_EQ(results[t][run].size(), expected.size());
      EXPECT_EQ(std::memcmp(results[t][run].data(), expected.data(), expected.size() * sizeof(float)), 0)
          << backend << ": thread " << t << ", run " << run << " differs from the serial run";
    }
  }
}

TEST(Concurrency, EightContextsMatchASerialRunOnCpuReference) {
  expect_threads_match_serial("cpu-reference");
}

TEST(Concurrency, EightContextsMatchASerialRunOnCpu) {
  if (!has_backend("cpu")) GTEST_SKIP() << "this kiln is built without oneDNN";
  expect_threads_match_serial("cpu");
}

}  // namespace
