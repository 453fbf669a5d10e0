// kiln's C++ interface: a header-only layer over the C API (kiln.h) with owning handles, std::span
// buffers and exceptions. It links against libkiln.so only. See docs/api/CPP.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::sdk {

// A failed call: the status and the one-line message `kiln` prints after "kiln: error: ".
class Error : public std::runtime_error {
 public:
  Error(kiln_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  kiln_status status() const { return status_; }

 private:
  kiln_status status_;
};

namespace detail {

inline const kiln_api& api() {
  static const kiln_api* table = [] {
    const kiln_api* found = nullptr;
    const kiln_status status = kiln_get_api(KILN_ABI_MAJOR, KILN_ABI_MINOR, &found);
    if (status != KILN_OK) throw Error(status, "libkiln does not offer the C API this header was built for");
    return found;
  }();
  return *table;
}

// Throws the error a call reported.
inline void check(kiln_status status, kiln_error*& error) {  // read after the call that sets it
  if (status == KILN_OK) return;
  const std::string message = error != nullptr ? api().error_message(error) : kiln_status_name(status);
  if (error != nullptr) api().error_free(error);
  throw Error(status, message);
}

template <typename Handle, void (*kiln_api::*Free)(Handle*)>
struct Deleter {
  void operator()(Handle* handle) const { (api().*Free)(handle); }
};

template <typename Handle, void (*kiln_api::*Free)(Handle*)>
using Owned = std::unique_ptr<Handle, Deleter<Handle, Free>>;

}  // namespace detail

inline std::string version() { return detail::api().version(); }

// The backends offered here, the default first (cuda where its plugin is installed; ABI 1.4).
inline std::vector<std::string> backends() {
  std::vector<std::string> names;
  for (std::size_t i = 0; const char* name = detail::api().backend_at(i); ++i) names.emplace_back(name);
  return names;
}

// One line on a backend, as `kiln --version` prints it (for cuda: whether its plugin loads here, and why
// not); empty for a name this library does not know.
inline std::string backend_status(const std::string& backend) {
  const char* line = detail::api().backend_status(backend.c_str());
  return line != nullptr ? line : "";
}

class Plan {
 public:
  static Plan load(const std::filesystem::path& path) {
    kiln_plan* plan = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().plan_load_file(path.c_str(), &plan, &error), error);
    return Plan(plan);
  }
  static Plan from_memory(std::span<const std::byte> bytes, const std::string& name = "<memory>") {
    kiln_plan* plan = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().plan_load_memory(bytes.data(), bytes.size(), name.c_str(), &plan, &error),
                  error);
    return Plan(plan);
  }
  std::string family() const { return detail::api().plan_family(handle_.get()); }
  std::int64_t batch() const { return detail::api().plan_batch(handle_.get()); }
  const kiln_plan* get() const { return handle_.get(); }

 private:
  explicit Plan(kiln_plan* plan) : handle_(plan) {}
  detail::Owned<kiln_plan, &kiln_api::plan_free> handle_;
};

struct EngineOptions {
  std::string backend;  // empty: the fastest CPU backend built in
  int device = 0;
  std::int64_t batch = 0;  // 0: the plan's
  int threads = 0;
  bool strict_backend = false;
  std::string tactic_cache;

  kiln_engine_options to_c() const {
    kiln_engine_options c{};
    c.struct_size = sizeof(c);
    c.backend = backend.empty() ? nullptr : backend.c_str();
    c.device = device;
    c.batch = batch;
    c.threads = threads;
    c.strict_backend = strict_backend ? 1 : 0;
    c.tactic_cache = tactic_cache.empty() ? nullptr : tactic_cache.c_str();
    return c;
  }
};

struct TensorInfo {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t elements() const {
    std::size_t n = 1;
    for (const std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

// Caller-owned f32 memory holding one tensor (host, or CUDA device memory for run_device).
struct Buffer {
  void* data = nullptr;
  std::size_t size_bytes = 0;
  std::span<const std::int64_t> shape;
};

// Interleaved 8-bit pixels; row_stride 0: tightly packed.
struct ImageView {
  std::span<const std::uint8_t> pixels;
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::size_t row_stride = 0;
  kiln_pixel_layout layout = KILN_PIXELS_RGB8;
};

struct ClassScore {
  std::int64_t class_index = 0;
  double probability = 0;
  double logit = 0;
  std::string label;
};

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  float score = 0;
  std::int64_t class_index = 0;
  std::string class_name;
};

namespace detail {

inline std::vector<kiln_tensor> to_c(std::span<const Buffer> buffers) {
  std::vector<kiln_tensor> tensors;
  for (const Buffer& b : buffers)
    tensors.push_back({b.data, b.size_bytes, KILN_DTYPE_F32, b.shape.size(), b.shape.data()});
  return tensors;
}

inline kiln_image to_c(const ImageView& image) {
  kiln_image c{};
  c.struct_size = sizeof(c);
  c.pixels = image.pixels.data();
  c.width = image.width;
  c.height = image.height;
  c.row_stride = image.row_stride;
  c.layout = image.layout;
  return c;
}

}  // namespace detail

class Context {
 public:
  // Host buffers in and out, in the engine's order.
  void run(std::span<const Buffer> inputs, std::span<const Buffer> outputs) {
    const auto in = detail::to_c(inputs);
    const auto out = detail::to_c(outputs);
    kiln_error* error = nullptr;
    detail::check(
        detail::api().context_run(handle_.get(), in.data(), in.size(), out.data(), out.size(), &error),
        error);
  }
  // CUDA device buffers on `cuda_stream` (a cudaStream_t), asynchronously; see kiln.h.
  void run_device(std::span<const Buffer> inputs, std::span<const Buffer> outputs, void* cuda_stream) {
    const auto in = detail::to_c(inputs);
    const auto out = detail::to_c(outputs);
    kiln_error* error = nullptr;
    detail::check(detail::api().context_run_device(handle_.get(), in.data(), in.size(), out.data(),
                                                   out.size(), cuda_stream, &error),
                  error);
  }
  // One input batch in; each output back as a vector (shapes: Engine::outputs()).
  std::vector<std::vector<float>> run(std::span<const float> input);
  // 1 to batch images under a classifier plan's preprocessing (as classify); each output of the whole
  // batch back as a vector, image i in slot i and zeros past the images (ABI 1.3). On cuda the images are
  // preprocessed on the device. Encoded JPEG / PNG / WebP images, or pixels.
  std::vector<std::vector<float>> run_images(std::span<const std::span<const std::uint8_t>> encoded);
  std::vector<std::vector<float>> run_images(std::span<const ImageView> images);

  std::vector<ClassScore> classify(std::span<const std::uint8_t> encoded, std::size_t top_k = 5) {
    kiln_classifications* result = nullptr;
    kiln_error* error = nullptr;
    const kiln_classify_options options{sizeof(kiln_classify_options), top_k};
    detail::check(detail::api().classify_encoded(handle_.get(), encoded.data(), encoded.size(), &options,
                                                 &result, &error),
                  error);
    return scores(result);
  }
  std::vector<ClassScore> classify(const ImageView& image, std::size_t top_k = 5) {
    kiln_classifications* result = nullptr;
    kiln_error* error = nullptr;
    const kiln_classify_options options{sizeof(kiln_classify_options), top_k};
    const kiln_image c = detail::to_c(image);
    detail::check(detail::api().classify_pixels(handle_.get(), &c, &options, &result, &error), error);
    return scores(result);
  }

 private:
  friend class Engine;
  Context(kiln_context* context, std::vector<TensorInfo> inputs, std::vector<TensorInfo> outputs)
      : handle_(context), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}
  // A vector for each output and the host buffers pointing at them.
  struct HostOutputs {
    std::vector<std::vector<float>> values;
    std::vector<kiln_tensor> tensors;
  };
  HostOutputs host_outputs() const;
  static std::vector<ClassScore> scores(kiln_classifications* result) {
    const detail::Owned<kiln_classifications, &kiln_api::classifications_free> owned(result);
    std::vector<ClassScore> found;
    for (std::size_t i = 0; i < detail::api().classifications_count(result); ++i) {
      const kiln_class_score* s = detail::api().classifications_at(result, i);
      found.push_back({s->class_index, s->probability, s->logit, s->label});
    }
    return found;
  }

  detail::Owned<kiln_context, &kiln_api::context_free> handle_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
};

class Engine {
 public:
  explicit Engine(const Plan& plan, const EngineOptions& options = {}) {
    const kiln_engine_options c = options.to_c();
    kiln_engine* engine = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().engine_create(plan.get(), &c, &engine, &error), error);
    handle_.reset(engine);
    for (std::size_t i = 0; i < detail::api().engine_input_count(engine); ++i)
      inputs_.push_back(info(i, false));
    for (std::size_t i = 0; i < detail::api().engine_output_count(engine); ++i)
      outputs_.push_back(info(i, true));
  }
  std::string backend() const { return detail::api().engine_backend(handle_.get()); }
  std::int64_t batch() const { return detail::api().engine_batch(handle_.get()); }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // The layers that run on the CPU fallback instead of the engine's backend (ABI 1.2).
  std::vector<std::string> fallback_layers() const {
    std::vector<std::string> layers;
    for (std::size_t i = 0; i < detail::api().engine_fallback_count(handle_.get()); ++i)
      layers.emplace_back(detail::api().engine_fallback_layer(handle_.get(), i));
    return layers;
  }
  // A context for one thread; it shares the engine's plan.
  Context context() const {
    kiln_context* context = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().context_create(handle_.get(), &context, &error), error);
    return Context(context, inputs_, outputs_);
  }

 private:
  TensorInfo info(std::size_t index, bool output) const {
    kiln_tensor_info c{};
    kiln_error* error = nullptr;
    const auto get = output ? detail::api().engine_output_info : detail::api().engine_input_info;
    detail::check(get(handle_.get(), index, &c, &error), error);
    return {c.name, std::vector<std::int64_t>(c.shape, c.shape + c.rank)};
  }

  detail::Owned<kiln_engine, &kiln_api::engine_free> handle_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
};

inline Context::HostOutputs Context::host_outputs() const {
  HostOutputs outputs;
  for (const TensorInfo& info : outputs_) outputs.values.emplace_back(info.elements());
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    std::vector<float>& values = outputs.values[i];
    outputs.tensors.push_back({values.data(), values.size() * sizeof(float), KILN_DTYPE_F32,
                               outputs_[i].shape.size(), outputs_[i].shape.data()});
  }
  return outputs;
}

inline std::vector<std::vector<float>> Context::run(std::span<const float> input) {
  if (inputs_.size() != 1)
    throw Error(KILN_STATUS_INVALID_ARGUMENT, "run(input) needs an engine with one input");
  const kiln_tensor in{const_cast<float*>(input.data()), input.size_bytes(), KILN_DTYPE_F32,
                       inputs_[0].shape.size(), inputs_[0].shape.data()};
  HostOutputs out = host_outputs();
  kiln_error* error = nullptr;
  detail::check(
      detail::api().context_run(handle_.get(), &in, 1, out.tensors.data(), out.tensors.size(), &error),
      error);
  return std::move(out.values);
}

inline std::vector<std::vector<float>> Context::run_images(
    std::span<const std::span<const std::uint8_t>> encoded) {
  std::vector<const void*> bytes;
  std::vector<std::size_t> sizes;
  for (const std::span<const std::uint8_t> image : encoded) {
    bytes.push_back(image.data());
    sizes.push_back(image.size());
  }
  HostOutputs out = host_outputs();
  kiln_error* error = nullptr;
  detail::check(detail::api().context_run_encoded(handle_.get(), bytes.data(), sizes.data(), bytes.size(),
                                                  out.tensors.data(), out.tensors.size(), &error),
                error);
  return std::move(out.values);
}

inline std::vector<std::vector<float>> Context::run_images(std::span<const ImageView> images) {
  std::vector<kiln_image> views;
  for (const ImageView& image : images) views.push_back(detail::to_c(image));
  std::vector<const kiln_image*> pointers;
  for (const kiln_image& view : views) pointers.push_back(&view);
  HostOutputs out = host_outputs();
  kiln_error* error = nullptr;
  detail::check(detail::api().context_run_pixels(handle_.get(), pointers.data(), pointers.size(),
                                                 out.tensors.data(), out.tensors.size(), &error),
                error);
  return std::move(out.values);
}

// Where a detector comes from (kiln.h's kiln_detector_source).
struct DetectorSource {
  std::string family;  // "yolov10"
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;  // default: config.json beside the checkpoint
};

class Detector {
 public:
  explicit Detector(const DetectorSource& source, const EngineOptions& options = {}) {
    const std::string checkpoint = source.checkpoint.string();
    const std::string config = source.config ? source.config->string() : std::string();
    kiln_detector_source c{sizeof(kiln_detector_source), source.family.c_str(), checkpoint.c_str(),
                           source.config ? config.c_str() : nullptr};
    const kiln_engine_options engine = options.to_c();
    kiln_detector* detector = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().detector_create(&c, &engine, &detector, &error), error);
    handle_.reset(detector);
  }
  // A detector plan (`kiln build yolov10 ...`); a classifier plan throws.
  explicit Detector(const Plan& plan, const EngineOptions& options = {}) {
    const kiln_engine_options engine = options.to_c();
    kiln_detector* detector = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().detector_create_from_plan(plan.get(), &engine, &detector, &error), error);
    handle_.reset(detector);
  }
  std::size_t class_count() const { return detail::api().detector_class_count(handle_.get()); }
  std::vector<Detection> detect(std::span<const std::uint8_t> encoded, float min_score = 0.25f) {
    const kiln_detect_options options{sizeof(kiln_detect_options), min_score};
    kiln_detections* result = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().detect_encoded(handle_.get(), encoded.data(), encoded.size(), &options,
                                               &result, &error),
                  error);
    return detections(result);
  }
  std::vector<Detection> detect(const ImageView& image, float min_score = 0.25f) {
    const kiln_detect_options options{sizeof(kiln_detect_options), min_score};
    const kiln_image c = detail::to_c(image);
    kiln_detections* result = nullptr;
    kiln_error* error = nullptr;
    detail::check(detail::api().detect_pixels(handle_.get(), &c, &options, &result, &error), error);
    return detections(result);
  }

 private:
  static std::vector<Detection> detections(kiln_detections* result) {
    const detail::Owned<kiln_detections, &kiln_api::detections_free> owned(result);
    std::vector<Detection> found;
    for (std::size_t i = 0; i < detail::api().detections_count(result); ++i) {
      const kiln_detection* d = detail::api().detections_at(result, i);
      found.push_back({d->x1, d->y1, d->x2, d->y2, d->score, d->class_index, d->class_name});
    }
    return found;
  }

  detail::Owned<kiln_detector, &kiln_api::detector_free> handle_;
};

}  // namespace kiln::sdk
