#include "sdk/device_images.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_util.h"
#include "backends/cuda/device_preprocess.h"
#include "sdk/sdk_engine.h"

namespace kiln::embed {

struct DeviceImageRunner::State {
  cuda::DevicePreprocessor preprocessor;
  cuda::DeviceBuffer input;
  std::vector<cuda::DeviceBuffer> outputs;
  cudaStream_t stream = nullptr;
};

DeviceImageRunner::DeviceImageRunner(const SdkContext& context) : state_(std::make_unique<State>()) {
  const SdkEngine& engine = context.engine();
  cuda::check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "creating a stream");
  state_->input = cuda::DeviceBuffer(engine.inputs().front().bytes());
  for (const TensorInfo& output : engine.outputs()) state_->outputs.emplace_back(output.bytes());
}

DeviceImageRunner::~DeviceImageRunner() {
  if (state_ && state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

std::vector<Tensor> DeviceImageRunner::run_eval_transform(SdkContext& context, std::span<const Image> images,
                                                          const PreprocessConfig& config) {
  const SdkEngine& engine = context.engine();
  const TensorInfo& input = engine.inputs().front();
  cudaStream_t stream = state_->stream;
  const std::size_t slot = input.bytes() / sizeof(float) / static_cast<std::size_t>(engine.batch());
  auto* batch = static_cast<float*>(state_->input.data());
  for (std::size_t i = 0; i < images.size(); ++i)
    state_->preprocessor.eval_transform(images[i], config, batch + i * slot, stream);
  // Only the slots no image fills are cleared: the host path's batch starts as zeros.
  const std::size_t filled_bytes = images.size() * slot * sizeof(float);
  if (filled_bytes < input.bytes()) {
    cuda::check(cudaMemsetAsync(batch + images.size() * slot, 0, input.bytes() - filled_bytes, stream),
                "clearing the batch slots past the images");
  }
  const std::vector<BufferView> inputs = {{state_->input.data(), input.bytes(), input.shape}};
  std::vector<BufferView> outputs;
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < engine.outputs().size(); ++i) {
    const TensorInfo& output = engine.outputs()[i];
    outputs.push_back({state_->outputs[i].data(), output.bytes(), output.shape});
    results.emplace_back(DType::kF32, output.shape);
  }
  context.run_device(inputs, outputs, stream);
  for (std::size_t i = 0; i < results.size(); ++i) {
    cuda::check(cudaMemcpyAsync(results[i].mutable_data<float>(), state_->outputs[i].data(),
                                results[i].nbytes(), cudaMemcpyDeviceToHost, stream),
                "copying an output to the host");
  }
  cuda::check(cudaStreamSynchronize(stream), "running images on the device");
  return results;
}

}  // namespace kiln::embed
