// One cuda engine, eight threads, each with its own context and its own non-blocking stream, each
// enqueueing device runs of its own input buffers back to back: every output equals a serial device run
// of the same engine on that input. Skipped without a CUDA device.
//
// Every context of one engine takes the tactics the engine's first compile chose, and kiln's kernels add
// in a fixed order (the global pool's pixel splits too), so each output must be bit-identical to the
// serial run of its input: a wrong buffer, a race or a stream mix-up would show in any bit.
#include <gtest/gtest.h>

#include <cstring>
#include <latch>
#include <random>
#include <thread>

#include "cuda_test_support.h"
#include "kiln/kiln.hpp"

namespace {

namespace ks = kiln::sdk;

constexpr std::size_t kThreads = 8;
constexpr std::size_t kRunsPerThread = 4;
constexpr std::int64_t kBatch = 2;

// Seeded normal values, one batch per thread: a context that read another's input would show.
std::vector<std::vector<float>> thread_inputs(std::size_t elements) {
  std::vector<std::vector<float>> batches(kThreads, std::vector<float>(elements));
  for (std::size_t t = 0; t < kThreads; ++t) {
    std::mt19937 generator(static_cast<unsigned>(1000 + t));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& value : batches[t]) value = normal(generator);
  }
  return batches;
}

// Thread t runs batch t and batch t+1 in turn: each batch is run by two threads.
std::size_t batch_of(std::size_t thread, std::size_t run) { return (thread + run % 2) % kThreads; }

// One device run per batch, one at a time, on one context and stream.
std::vector<std::vector<float>> serial_runs(const ks::Engine& engine,
                                            const std::vector<std::vector<float>>& batches) {
  ks::Context context = engine.context();
  const CudaStream stream;
  const std::size_t out_elements = engine.outputs().at(0).elements();
  std::vector<std::vector<float>> results;
  for (const auto& batch : batches) {
    const DeviceFloats in(batch);
    const DeviceFloats out(out_elements);
    const ks::Buffer in_buffer{in.data(), in.bytes(), engine.inputs()[0].shape};
    const ks::Buffer out_buffer{out.data(), out.bytes(), engine.outputs()[0].shape};
    context.run_device(std::span(&in_buffer, 1), std::span(&out_buffer, 1), stream.get());
    stream.synchronize();
    results.push_back(out.download());
  }
  return results;
}

// What one thread does: its context is compiled while the others compile theirs, then every run is
// enqueued without waiting, each into an output buffer of its own.
std::vector<std::vector<float>> thread_runs(const ks::Engine& engine,
                                            const std::vector<std::vector<float>>& batches,
                                            std::size_t thread, std::latch& ready, bool& arrived) {
  ks::Context context = engine.context();
  const CudaStream stream;
  const DeviceFloats first(batches[batch_of(thread, 0)]);
  const DeviceFloats second(batches[batch_of(thread, 1)]);
  std::vector<DeviceFloats> outs;
  for (std::size_t run = 0; run < kRunsPerThread; ++run) outs.emplace_back(engine.outputs()[0].elements());
  arrived = true;
  ready.arrive_and_wait();  // all threads enqueue at once
  for (std::size_t run = 0; run < kRunsPerThread; ++run) {
    const DeviceFloats& in = run % 2 == 0 ? first : second;
    const ks::Buffer in_buffer{in.data(), in.bytes(), engine.inputs()[0].shape};
    const ks::Buffer out_buffer{outs[run].data(), outs[run].bytes(), engine.outputs()[0].shape};
    context.run_device(std::span(&in_buffer, 1), std::span(&out_buffer, 1), stream.get());
  }
  stream.synchronize();
  std::vector<std::vector<float>> results;
  for (const DeviceFloats& out : outs) results.push_back(out.download());
  return results;
}

void expect_threads_match_serial(const std::filesystem::path& plan) {
  ks::EngineOptions options;
  options.backend = "cuda";
  options.batch = kBatch;
  const ks::Engine engine(ks::Plan::load(plan), options);
  const auto batches = thread_inputs(engine.inputs().at(0).elements());
  const auto serial = serial_runs(engine, batches);
  ASSERT_NE(serial[0], serial[1]);

  std::vector<std::vector<std::vector<float>>> results(kThreads);
  std::vector<std::string> failures(kThreads);
  std::latch ready(static_cast<std::ptrdiff_t>(kThreads));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      bool arrived = false;
      try {
        results[t] = thread_runs(engine, batches, t, ready, arrived);
      } catch (const std::exception& error) {
        failures[t] = error.what();
        if (!arrived) ready.count_down();  // the others must not wait for this thread
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (std::size_t t = 0; t < kThreads; ++t) {
    ASSERT_EQ(failures[t], "") << "thread " << t;
    ASSERT_EQ(results[t].size(), kRunsPerThread);
    for (std::size_t run = 0; run < kRunsPerThread; ++run) {
      const auto& expected = serial[batch_of(t, run)];
      const auto& got = results[t][run];
      ASSERT_EQ(got.size(), expected.size());
      EXPECT_EQ(std::memcmp(got.data(), expected.data(), expected.size() * sizeof(float)), 0)
          << plan.filename() << ": thread " << t << ", run " << run << " differs from the serial run";
    }
  }
}

TEST(CudaConcurrency, EightStreamsMatchSerialRunsBitForBitOnResNet) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  expect_threads_match_serial(sdk_fixture_dir() / "resnet_tiny.kplan");
}

TEST(CudaConcurrency, EightStreamsMatchSerialRunsBitForBitOnResNeSt) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  expect_threads_match_serial(sdk_fixture_dir() / "plan.kplan");
}

}  // namespace
