// What libkiln.so and the Python module serve, in C++: a plan compiled once per backend and device
// (SdkEngine) and the contexts that run it (SdkContext), with every check of a caller's buffers.
//
// An Engine is not reentrant (its compiled program owns one activation arena and its staging buffers),
// so each context owns an Engine of its own, compiled from the same in-memory plan: the plan's constants
// are shared, and a context reuses the per-layer choices (cuda tactics) of the engine's first compile
// instead of timing kernels again. The first context takes over that first compile.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/image.h"
#include "runtime/engine.h"

namespace kiln::embed {

// Errors the caller's arguments cause (a shape, a size, a missing handle), told apart from the rest so
// that the C API can say KILN_STATUS_INVALID_ARGUMENT; the message is still one line.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A file the caller names that does not exist (KILN_STATUS_NOT_FOUND).
class NotFound : public Error {
 public:
  using Error::Error;
};

// A backend or call this build of kiln does not offer (KILN_STATUS_UNSUPPORTED).
class Unsupported : public Error {
 public:
  using Error::Error;
};

struct EngineSettings {
  std::string backend;     // empty: default_backend()
  int device = 0;          // CUDA device ordinal on "cuda", 0 elsewhere
  std::int64_t batch = 0;  // 0: the plan's
  int threads = 0;
  bool strict_backend = false;
  std::string tactic_cache;
};

// An engine input or output: f32, dense, row-major.
struct TensorInfo {
  std::string name;
  Shape shape;
  std::size_t bytes() const;
};

// Caller-owned memory holding one f32 tensor (host or device, as the call says).
struct BufferView {
  void* data = nullptr;
  std::size_t size_bytes = 0;
  Shape shape;
};

class SdkEngine {
 public:
  SdkEngine(std::shared_ptr<const Plan> plan, EngineSettings settings);

  const Plan& plan() const { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const { return plan_; }
  const EngineSettings& settings() const { return settings_; }
  const std::string& backend() const { return settings_.backend; }
  std::int64_t batch() const { return settings_.batch; }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::vector<std::string>& fallback_layers() const { return fallback_layers_; }
  const Backend& runs_on() const { return *backend_; }
  // The backend's device (backends/device.h): a device engine runs on device buffers; null on a host one.
  const Device* device() const { return backend_->device(); }
  // A compiled program for a new context: the first compile once, fresh ones after it.
  std::unique_ptr<Engine> make_program() const;

 private:
  std::shared_ptr<const Plan> plan_;
  EngineSettings settings_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::unique_ptr<Backend> backend_;
  std::vector<std::string> fallback_layers_;
  CompileOptions compile_;
  mutable std::mutex spare_mutex_;
  mutable std::unique_ptr<Engine> spare_;
};

class DeviceImageRunner;

class SdkContext {
 public:
  explicit SdkContext(std::shared_ptr<const SdkEngine> engine);
  ~SdkContext();
  SdkContext(const SdkContext&) = delete;
  SdkContext& operator=(const SdkContext&) = delete;

  const SdkEngine& engine() const { return *engine_; }
  // One batch in, the graph's outputs back (f32 host tensors).
  std::vector<Tensor> run(const Tensor& input);
  // Host buffers in and out, checked against the engine's inputs and outputs.
  void run_host(std::span<const BufferView> inputs, std::span<const BufferView> outputs);
  // Fails with InvalidArgument unless `outputs` are host buffers matching the engine's outputs.
  void check_host_outputs(std::span<const BufferView> outputs) const;
  // Device buffers in and out on `stream`, asynchronously (cuda engines; runtime/engine.h).
  void run_device(std::span<const BufferView> inputs, std::span<const BufferView> outputs, void* stream);
  // The outputs for a batch whose slot i holds images[i] under timm's eval transform and whose slots past
  // the images are zeros (1 to batch images). On cuda with no CPU fallback layer the transform runs on
  // the device (sdk/device_images.h); the input is the same bits either way.
  std::vector<Tensor> run_eval_transform(std::span<const Image> images, const PreprocessConfig& config);
  // The same outputs written into host buffers, checked as run_host checks them.
  void run_eval_transform(std::span<const Image> images, const PreprocessConfig& config,
                          std::span<const BufferView> outputs);

 private:
  std::shared_ptr<const SdkEngine> engine_;
  std::unique_ptr<Engine> program_;
  std::unique_ptr<DeviceImageRunner> device_images_;  // made on the first image run on a device
};

// Fails with InvalidArgument unless 1 <= count <= batch: the images a batch of `batch` slots takes.
void check_image_count(std::size_t count, std::int64_t batch);

// Fails with Unsupported (naming the backends built in) when this kiln lacks `backend`.
void require_backend(const std::string& backend);

// Makes `device` the calling thread's current device on a backend with one (backends/device.h); checks it is
// 0 elsewhere.
void select_device(const std::string& backend, int device);
void select_device(const Backend& backend, int device);

}  // namespace kiln::embed
