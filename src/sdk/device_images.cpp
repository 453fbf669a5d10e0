#include "sdk/device_images.h"

#include "backends/device_buffer.h"
#include "sdk/sdk_engine.h"

namespace kiln::embed {

struct DeviceImageRunner::State {
  State(const Device& on, std::size_t input_bytes)
      : device(on), images(on.make_images()), stream(on), input(on, input_bytes) {}
  const Device& device;
  std::unique_ptr<DeviceImages> images;
  DeviceStream stream;
  DeviceBuffer input;
  std::vector<DeviceBuffer> outputs;
};

DeviceImageRunner::DeviceImageRunner(const Device& device, const SdkContext& context)
    : state_(std::make_unique<State>(device, context.engine().inputs().front().bytes())) {
  for (const TensorInfo& output : context.engine().outputs())
    state_->outputs.emplace_back(device, output.bytes());
}

DeviceImageRunner::~DeviceImageRunner() = default;

std::vector<Tensor> DeviceImageRunner::run_eval_transform(SdkContext& context, std::span<const Image> images,
                                                          const PreprocessConfig& config) {
  const SdkEngine& engine = context.engine();
  const TensorInfo& input = engine.inputs().front();
  const Device& device = state_->device;
  void* stream = state_->stream.get();
  const std::size_t slot = input.bytes() / sizeof(float) / static_cast<std::size_t>(engine.batch());
  auto* batch = static_cast<float*>(state_->input.data());
  for (std::size_t i = 0; i < images.size(); ++i)
    state_->images->eval_transform(images[i], config, batch + i * slot, stream);
  // Only the slots no image fills are cleared: the host path's batch starts as zeros.
  const std::size_t filled_bytes = images.size() * slot * sizeof(float);
  if (filled_bytes < input.bytes()) {
    device.clear(batch + images.size() * slot, input.bytes() - filled_bytes, stream,
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
    device.copy_to_host(results[i].mutable_data<float>(), state_->outputs[i].data(), results[i].nbytes(),
                        stream, "copying an output to the host");
  }
  device.synchronize(stream, "running images on the device");
  return results;
}

}  // namespace kiln::embed
