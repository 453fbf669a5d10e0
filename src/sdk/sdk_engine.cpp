#include "sdk/sdk_engine.h"

#include <algorithm>
#include <cstring>

#include "backends/device.h"
#include "sdk/device_images.h"
#include "sdk/tensor_checks.h"

namespace kiln::embed {

namespace {

// The graph's shape of a value for a batch of `batch` (the leading dimension is the batch).
Shape batched(Shape shape, std::int64_t batch) {
  if (!shape.empty()) shape[0] = batch;
  return shape;
}

std::vector<TensorInfo> tensor_infos(const Graph& graph, const std::vector<ValueId>& ids,
                                     std::int64_t batch) {
  std::vector<TensorInfo> infos;
  for (const ValueId id : ids) {
    const Value& value = graph.value(id);
    infos.push_back({value.name, batched(value.shape, batch)});
  }
  return infos;
}

CompileOptions compile_options(const EngineSettings& settings) {
  CompileOptions options;
  options.batch = settings.batch;
  options.threads = settings.threads;
  options.strict_backend = settings.strict_backend;
  options.tactic_cache = settings.tactic_cache;
  return options;
}

EngineSettings resolved(EngineSettings settings, const Plan& plan) {
  if (settings.backend.empty()) settings.backend = default_backend();
  if (settings.batch == 0) settings.batch = plan.info.batch;
  if (settings.batch < 1) throw InvalidArgument(cat("batch must be at least 1, got ", settings.batch));
  if (settings.threads < 0) throw InvalidArgument(cat("threads must be 0 or more, got ", settings.threads));
  return settings;
}

// Host runs take host memory: device memory is refused naming the tensor.
void refuse_device_buffers(const Device& device, std::span<const BufferView> buffers, const char* role) {
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (device.holds(buffers[i].data)) {
      throw InvalidArgument(cat(role, " ", i, ": ", device.kind(), " device memory; a host run takes host ",
                                "buffers (device buffers go to a device run: context_run_device)"));
    }
  }
}

// The engine's input must be a batch of images the eval transform makes, with room for `count` of them.
void check_eval_batch(const SdkEngine& engine, std::size_t count, const PreprocessConfig& config) {
  const std::int64_t size = config.input_size;
  const Shape images = {engine.batch(), 3, size, size};
  require(engine.inputs().size() == 1 && engine.inputs().front().shape == images, "the engine's input ",
          shape_str(engine.inputs().front().shape), " is not a batch of ", size, "x", size,
          " images, as the plan's preprocessing makes them (", shape_str(images), ")");
  check_image_count(count, engine.batch());
}

// Copies a run's results into the caller's host buffers (already checked against the engine's outputs).
void write_outputs(const std::vector<Tensor>& results, std::span<const BufferView> outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    require(results.at(i).shape() == outputs[i].shape, "output ", i, ": the engine returned shape ",
            shape_str(results[i].shape()), ", not the ", shape_str(outputs[i].shape), " it declares");
    std::memcpy(outputs[i].data, results.at(i).bytes(), results[i].nbytes());
  }
}

}  // namespace

void check_image_count(std::size_t count, std::int64_t batch) {
  if (count == 0)
    throw InvalidArgument(cat("no images given: an engine of batch ", batch, " takes 1 to ", batch));
  if (count > static_cast<std::size_t>(batch)) {
    throw InvalidArgument(cat(count, " images for an engine of batch ", batch, ": it takes at most ", batch,
                              " (make the engine with a larger batch)"));
  }
}

std::size_t TensorInfo::bytes() const { return static_cast<std::size_t>(shape_numel(shape)) * sizeof(float); }

void require_backend(const std::string& backend) {
  try {
    make_backend(backend);
  } catch (const Error& unknown) {
    throw Unsupported(unknown.what());  // names the backends built in
  }
}

void select_device(const std::string& backend, int device) { select_device(*make_backend(backend), device); }

void select_device(const Backend& backend, int device) {
  const Device* on = backend.device();
  if (on == nullptr) {
    if (device != 0)
      throw InvalidArgument(cat("device ", device, ": the ", backend.name(), " backend has device 0 only"));
    return;
  }
  const int count = on->count();
  if (count == 0) throw Unsupported(cat(backend.name(), " backend: no ", on->kind(), " device on this machine"));
  if (device < 0 || device >= count) {
    throw InvalidArgument(cat("device ", device, ": no such ", on->kind(), " device (", count, " found)"));
  }
  require(on->select(device), "device ", device, ": cannot make it the current ", on->kind(), " device");
}

SdkEngine::SdkEngine(std::shared_ptr<const Plan> plan, EngineSettings settings)
    : plan_(std::move(plan)),
      settings_(resolved(std::move(settings), *plan_)),
      compile_(compile_options(settings_)) {
  require_backend(settings_.backend);
  backend_ = make_backend(settings_.backend);
  select_device(*backend_, settings_.device);
  spare_ = std::make_unique<Engine>(plan_, settings_.backend, compile_);
  fallback_layers_ = spare_->fallback_layers();
  compile_.layer_data = spare_->layer_data();
  inputs_ = tensor_infos(plan_->graph, plan_->graph.inputs(), settings_.batch);
  outputs_ = tensor_infos(plan_->graph, plan_->graph.outputs(), settings_.batch);
}

std::unique_ptr<Engine> SdkEngine::make_program() const {
  {
    const std::lock_guard lock(spare_mutex_);
    if (spare_) return std::move(spare_);
  }
  select_device(*backend_, settings_.device);
  return std::make_unique<Engine>(plan_, settings_.backend, compile_);
}

SdkContext::SdkContext(std::shared_ptr<const SdkEngine> engine)
    : engine_(std::move(engine)), program_(engine_->make_program()) {}

SdkContext::~SdkContext() = default;

std::vector<Tensor> SdkContext::run_eval_transform(std::span<const Image> images,
                                                   const PreprocessConfig& config) {
  check_eval_batch(*engine_, images.size(), config);
  // The device path is a device run, which needs every layer on the device; a CPU fallback takes the host
  // path.
  if (const Device* device = engine_->device(); device != nullptr && engine_->fallback_layers().empty()) {
    select_device(engine_->runs_on(), engine_->settings().device);
    if (!device_images_) device_images_ = std::make_unique<DeviceImageRunner>(*device, *this);
    return device_images_->run_eval_transform(*this, images, config);
  }
  Tensor batch(DType::kF32, engine_->inputs().front().shape);
  std::fill_n(batch.mutable_data<float>(), batch.numel(), 0.0f);
  const std::int64_t slot = batch.numel() / engine_->batch();
  for (std::size_t i = 0; i < images.size(); ++i) {
    const Tensor pixels = preprocess_image(images[i], config);
    std::copy_n(pixels.f32().data(), slot, batch.mutable_data<float>() + static_cast<std::int64_t>(i) * slot);
  }
  return run(batch);
}

void SdkContext::run_eval_transform(std::span<const Image> images, const PreprocessConfig& config,
                                    std::span<const BufferView> outputs) {
  check_host_outputs(outputs);
  write_outputs(run_eval_transform(images, config), outputs);
}

std::vector<Tensor> SdkContext::run(const Tensor& input) {
  select_device(engine_->runs_on(), engine_->settings().device);
  return program_->run(input);
}

void SdkContext::run_host(std::span<const BufferView> inputs, std::span<const BufferView> outputs) {
  check_buffers(inputs, engine_->inputs(), "input");
  // On a device engine device buffers are likely; reading one as host memory would crash.
  if (const Device* device = engine_->device()) refuse_device_buffers(*device, inputs, "input");
  check_host_outputs(outputs);
  const TensorInfo& info = engine_->inputs().front();
  const Tensor input = Tensor::view(DType::kF32, info.shape, inputs.front().data, nullptr);
  write_outputs(run(input), outputs);
}

void SdkContext::check_host_outputs(std::span<const BufferView> outputs) const {
  check_buffers(outputs, engine_->outputs(), "output");
  if (const Device* device = engine_->device()) refuse_device_buffers(*device, outputs, "output");
}

void SdkContext::run_device(std::span<const BufferView> inputs, std::span<const BufferView> outputs,
                            void* stream) {
  check_buffers(inputs, engine_->inputs(), "input");
  check_buffers(outputs, engine_->outputs(), "output");
  std::vector<const void*> device_inputs;
  for (const BufferView& input : inputs) device_inputs.push_back(input.data);
  std::vector<void*> device_outputs;
  for (const BufferView& output : outputs) device_outputs.push_back(output.data);
  select_device(engine_->runs_on(), engine_->settings().device);
  program_->run_device(device_inputs, device_outputs, stream);
}

}  // namespace kiln::embed
