#include "pipeline/device_letterbox_run.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_util.h"
#include "backends/cuda/device_preprocess.h"

namespace kiln::pipeline {

struct DeviceLetterboxRun::State {
  cuda::DevicePreprocessor preprocessor;
  cuda::DeviceBuffer input;
  std::vector<cuda::DeviceBuffer> outputs;
  std::vector<Shape> output_shapes;
  std::int64_t size = 0;          // the square input's side
  std::int64_t image_values = 0;  // 3 x size x size
  cudaStream_t stream = nullptr;
};

DeviceLetterboxRun::DeviceLetterboxRun(const Engine& engine) : state_(std::make_unique<State>()) {
  const Graph& graph = engine.plan().graph;
  const Shape input = graph.value(graph.inputs().at(0)).shape;
  require(input.size() == 4 && input[1] == 3 && input[2] == input[3],
          "device letterbox: the detector's input is not [N, 3, S, S], got ", shape_str(input));
  state_->size = input[2];
  state_->image_values = 3 * input[2] * input[3];
  state_->input =
      cuda::DeviceBuffer(static_cast<std::size_t>(engine.batch() * state_->image_values) * sizeof(float));
  for (const ValueId id : graph.outputs()) {
    Shape shape = graph.value(id).shape;
    shape.at(0) = engine.batch();
    state_->outputs.emplace_back(static_cast<std::size_t>(shape_numel(shape)) * sizeof(float));
    state_->output_shapes.push_back(std::move(shape));
  }
  cuda::check(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking), "creating a stream");
}

DeviceLetterboxRun::~DeviceLetterboxRun() {
  if (state_ && state_->stream != nullptr) cudaStreamDestroy(state_->stream);
}

std::vector<Tensor> DeviceLetterboxRun::run(Engine& engine, const std::vector<Image>& images,
                                            const std::vector<Letterbox>& boxes, std::uint8_t fill) {
  require(images.size() == boxes.size() && static_cast<std::int64_t>(images.size()) == engine.batch(),
          "device letterbox: ", images.size(), " images and ", boxes.size(), " placements for a batch of ",
          engine.batch());
  auto* input = static_cast<float*>(state_->input.data());
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Letterbox& box = boxes[i];
    state_->preprocessor.letterbox(
        images[i], {state_->size, box.scaled_width, box.scaled_height, box.left, box.top, fill},
        input + static_cast<std::int64_t>(i) * state_->image_values, state_->stream);
  }
  std::vector<void*> outputs;
  for (cuda::DeviceBuffer& output : state_->outputs) outputs.push_back(output.data());
  engine.run_device({state_->input.data()}, outputs, state_->stream);
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    results.emplace_back(DType::kF32, state_->output_shapes[i]);
    cuda::check(cudaMemcpyAsync(results.back().mutable_data<float>(), outputs[i], results.back().nbytes(),
                                cudaMemcpyDeviceToHost, state_->stream),
                "copying a detector output to the host");
  }
  cuda::check(cudaStreamSynchronize(state_->stream), "running a detector batch on the device");
  return results;
}

}  // namespace kiln::pipeline
