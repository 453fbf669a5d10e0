// Device runs through the C++ wrapper: CUDA buffers the test owns, on its own stream, give what a host
// run of the same context gives; host pointers are refused. Skipped without a CUDA device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <fstream>

#include "cuda_test_support.h"
#include "fixture_photos.h"
#include "kiln/kiln.hpp"
#include "read_all.h"

namespace {

namespace ks = kiln::sdk;

const std::filesystem::path kFixture = sdk_fixture_dir();

// The tiny ResNeSt fixture plan on cuda, batch 2.
ks::Engine fixture_engine() {
  ks::EngineOptions options;
  options.backend = "cuda";
  options.batch = 2;
  return ks::Engine(ks::Plan::load(kFixture / "plan.kplan"), options);
}

TEST(CudaDeviceRun, EqualsTheHostRunOnTheCallersStream) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const ks::Engine engine = fixture_engine();
  ks::Context context = engine.context();
  const std::vector<float> input = read_all<float>(kFixture / "input.f32");
  const std::vector<float> host = context.run(input).at(0);

  const std::size_t in_bytes = input.size() * sizeof(float), out_bytes = host.size() * sizeof(float);
  void* device_in = nullptr;
  void* device_out = nullptr;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaMalloc(&device_in, in_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_out, out_bytes), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_in, input.data(), in_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(device_out, 0, out_bytes), cudaSuccess);
  const ks::Buffer in{device_in, in_bytes, engine.inputs()[0].shape};
  const ks::Buffer out{device_out, out_bytes, engine.outputs()[0].shape};
  for (int run = 0; run < 3; ++run) context.run_device(std::span(&in, 1), std::span(&out, 1), stream);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  std::vector<float> device_result(host.size());
  ASSERT_EQ(cudaMemcpy(device_result.data(), device_out, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  // One program, the same input bits: the same output bits (its kernels add in a fixed order, the
  // global pool's splits too), whichever way the input came in.
  EXPECT_EQ(device_result, host);
  // A host run after device runs on another stream sees their end.
  EXPECT_EQ(context.run(input).at(0), host);

  std::vector<float> not_device(host.size());
  const ks::Buffer host_out{not_device.data(), out_bytes, engine.outputs()[0].shape};
  EXPECT_THROW(context.run_device(std::span(&in, 1), std::span(&host_out, 1), stream), ks::Error);
  // A device buffer given to a host run is refused by name, not read as host memory.
  try {
    context.run(std::span(&in, 1), std::span(&host_out, 1));
    ADD_FAILURE() << "a host run took a device buffer";
  } catch (const ks::Error& error) {
    EXPECT_NE(std::string(error.what()).find("input 0: CUDA device memory; a host run takes host buffers"),
              std::string::npos)
        << error.what();
  }
  cudaStreamDestroy(stream);
  cudaFree(device_in);
  cudaFree(device_out);
}

// Each device run reads and writes the buffers it is given (the graph is pointed at them), whichever
// buffers the run before used, and a host run afterwards uses the program's own buffers again.
TEST(CudaDeviceRun, EachRunUsesItsOwnBuffersAndHostRunsTheirs) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const ks::Engine engine = fixture_engine();
  ks::Context context = engine.context();
  const std::vector<float> first = read_all<float>(kFixture / "input.f32");
  std::vector<float> second(first.rbegin(), first.rend());  // other pixels, same statistics
  const std::vector<float> first_host = context.run(first).at(0), second_host = context.run(second).at(0);
  ASSERT_NE(first_host, second_host);
  const std::size_t out_elements = engine.outputs()[0].elements();
  const DeviceFloats in_first(first), in_second(second);
  std::vector<DeviceFloats> outs;
  for (int run = 0; run < 3; ++run) outs.emplace_back(out_elements);
  const CudaStream stream;
  const DeviceFloats* inputs[] = {&in_first, &in_second, &in_first};
  for (std::size_t run = 0; run < 3; ++run) {
    const ks::Buffer in{inputs[run]->data(), inputs[run]->bytes(), engine.inputs()[0].shape};
    const ks::Buffer out{outs[run].data(), outs[run].bytes(), engine.outputs()[0].shape};
    context.run_device(std::span(&in, 1), std::span(&out, 1), stream.get());
  }
  stream.synchronize();
  EXPECT_EQ(outs[0].download(), first_host);
  EXPECT_EQ(outs[1].download(), second_host);
  EXPECT_EQ(outs[2].download(), first_host);
  EXPECT_EQ(context.run(second).at(0), second_host);
}

}  // namespace

namespace {

// classify on cuda preprocesses on the device (sdk/device_images.h); the graph must see the input the
// host path makes, so each reported logit equals, bit for bit, the logit of a host run of the same
// context on the host-preprocessed batch (make_fixture's dog_input.f32).
TEST(CudaDeviceRun, ClassifyPreprocessesOnTheDeviceToTheHostPathsInput) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const ks::Engine engine = fixture_engine();
  ks::Context context = engine.context();
  const std::vector<float> host_logits = context.run(read_all<float>(kFixture / "dog_input.f32")).at(0);
  const std::vector<std::uint8_t> rgb = read_all<std::uint8_t>(kFixture / "dog.rgb");
  std::int64_t width = 0, height = 0;
  std::ifstream(kFixture / "dog.size") >> width >> height;
  ASSERT_EQ(rgb.size(), static_cast<std::size_t>(width * height * 3));
  const std::vector<ks::ClassScore> scores = context.classify(ks::ImageView{rgb, width, height}, 5);
  ASSERT_EQ(scores.size(), 5u);
  for (const ks::ClassScore& score : scores) {
    EXPECT_EQ(score.logit, host_logits.at(static_cast<std::size_t>(score.class_index))) << score.label;
  }
  // And again, with the device buffers the first call made.
  EXPECT_EQ(context.classify(ks::ImageView{rgb, width, height}, 5).front().logit, scores.front().logit);
}

// Image runs on cuda preprocess every image on the device into its batch slot and clear the slots past
// them; the graph must see the batch the host path makes, so the outputs equal, bit for bit, a host run of
// the same context on make_fixture's host-preprocessed batches: one photo and a zero slot (N = 1), two
// photos of other formats and sizes filling the batch (N = batch). Encoded files and pixels alike.
TEST(CudaDeviceRun, ImageRunsPreprocessOnTheDeviceToTheHostPathsBatch) {
  if (!have_cuda_device()) GTEST_SKIP() << "no CUDA device";
  const ks::Engine engine = fixture_engine();
  ks::Context context = engine.context();
  expect_image_runs_equal_host_batches(context, kFixture);
}

}  // namespace
