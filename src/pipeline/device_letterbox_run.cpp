#include "pipeline/device_letterbox_run.h"

#include "backends/device_buffer.h"

namespace kiln::pipeline {

struct DeviceLetterboxRun::State {
  State(const Device& on, std::size_t input_bytes)
      : device(on), images(on.make_images()), input(on, input_bytes), stream(on) {}
  const Device& device;
  std::unique_ptr<DeviceImages> images;
  DeviceBuffer input;
  std::vector<DeviceBuffer> outputs;
  std::vector<Shape> output_shapes;
  DeviceStream stream;
  std::int64_t size = 0;          // the square input's side
  std::int64_t image_values = 0;  // 3 x size x size
};

DeviceLetterboxRun::DeviceLetterboxRun(const Device& device, const Engine& engine) {
  const Graph& graph = engine.plan().graph;
  const Shape input = graph.value(graph.inputs().at(0)).shape;
  require(input.size() == 4 && input[1] == 3 && input[2] == input[3],
          "device letterbox: the detector's input is not [N, 3, S, S], got ", shape_str(input));
  const std::int64_t image_values = 3 * input[2] * input[3];
  state_ = std::make_unique<State>(device,
                                   static_cast<std::size_t>(engine.batch() * image_values) * sizeof(float));
  state_->size = input[2];
  state_->image_values = image_values;
  for (const ValueId id : graph.outputs()) {
    Shape shape = graph.value(id).shape;
    shape.at(0) = engine.batch();
    state_->outputs.emplace_back(device, static_cast<std::size_t>(shape_numel(shape)) * sizeof(float));
    state_->output_shapes.push_back(std::move(shape));
  }
}

DeviceLetterboxRun::~DeviceLetterboxRun() = default;

std::vector<Tensor> DeviceLetterboxRun::run(Engine& engine, const std::vector<Image>& images,
                                            const std::vector<Letterbox>& boxes, std::uint8_t fill) {
  require(images.size() == boxes.size() && static_cast<std::int64_t>(images.size()) == engine.batch(),
          "device letterbox: ", images.size(), " images and ", boxes.size(), " placements for a batch of ",
          engine.batch());
  void* stream = state_->stream.get();
  auto* input = static_cast<float*>(state_->input.data());
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Letterbox& box = boxes[i];
    state_->images->letterbox(images[i],
                              {state_->size, box.scaled_width, box.scaled_height, box.left, box.top, fill},
                              input + static_cast<std::int64_t>(i) * state_->image_values, stream);
  }
  std::vector<void*> outputs;
  for (DeviceBuffer& output : state_->outputs) outputs.push_back(output.data());
  engine.run_device({state_->input.data()}, outputs, stream);
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    results.emplace_back(DType::kF32, state_->output_shapes[i]);
    state_->device.copy_to_host(results.back().mutable_data<float>(), outputs[i], results.back().nbytes(),
                                stream, "copying a detector output to the host");
  }
  state_->device.synchronize(stream, "running a detector batch on the device");
  return results;
}

}  // namespace kiln::pipeline
