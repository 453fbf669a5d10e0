#include "pipeline/detector_engine.h"

#include <algorithm>
#include <chrono>

#include "builder/build_plan.h"
#include "core/error.h"
#include "passes/pass.h"
#include "pipeline/detector_plan.h"
#include "pipeline/device_letterbox_run.h"
#include "pipeline/model_loading.h"

namespace kiln::pipeline {

DetectorEngine::DetectorEngine(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                               const std::optional<std::filesystem::path>& config_path, std::int64_t batch,
                               const std::string& backend, const CompileOptions& options) {
  BuildOptions build;  // fp32 with every pass, as kiln run builds a classifier checkpoint
  build.opt_level = kMaxPassLevel;
  build.batch = batch;
  build.backend = backend.empty() ? default_backend() : backend;
  build.tactic_cache = options.tactic_cache;
  build.strict_backend = options.strict_backend;
  DetectorModel model = load_detector(detector, checkpoint, config_path, batch);
  unused_keys_ = model.unused_keys;
  auto plan = std::make_shared<const Plan>(
      build_detector_in_memory(detector, std::move(model), checkpoint.filename().string(), build));
  CompileOptions compile = options;
  compile.batch = batch;
  start(std::move(plan), checkpoint.string(), build.backend, compile);
}

DetectorEngine::DetectorEngine(std::shared_ptr<const Plan> plan, const std::string& name,
                               const std::string& backend, const CompileOptions& options) {
  start(std::move(plan), name, backend.empty() ? default_backend() : backend, options);
}

void DetectorEngine::start(std::shared_ptr<const Plan> plan, const std::string& name,
                           const std::string& backend, const CompileOptions& options) {
  detector_ = &plan_detector(*plan, name);
  config_ = yolo_config(*plan->detector);
  engine_ = std::make_unique<Engine>(std::move(plan), backend, options);
  device_ = make_backend(backend)->device();
}

DetectorEngine::~DetectorEngine() = default;
DetectorEngine::DetectorEngine(DetectorEngine&&) noexcept = default;
DetectorEngine& DetectorEngine::operator=(DetectorEngine&&) noexcept = default;

bool DetectorEngine::letterboxes_on_device() const {
  return device_ != nullptr && engine_->fallback_layers().empty();
}

DetectorRun DetectorEngine::detect(const std::vector<Image>& images) {
  const auto batch = static_cast<std::int64_t>(images.size());
  require(batch == engine_->batch(), "this detector runs batches of ", engine_->batch(), " images, got ",
          batch);
  const std::int64_t size = config_.imgsz;
  std::vector<Letterbox> boxes;
  for (const Image& image : images) boxes.push_back(detector_->place(image.width, image.height, size));
  DetectorRun run;
  if (letterboxes_on_device()) {
    if (!device_run_) device_run_ = std::make_unique<DeviceLetterboxRun>(*device_, *engine_);
    const auto start = std::chrono::steady_clock::now();
    std::vector<Tensor> outputs = device_run_->run(*engine_, images, boxes, kLetterboxGrey);
    run = finish(std::move(outputs),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    run = detect_letterboxed(letterbox_on_host(images, *detector_, size));
  }
  for (std::size_t i = 0; i < run.detections.size(); ++i) {
    for (Detection& d : run.detections[i]) d = detector_->to_original(d, boxes[i]);
  }
  return run;
}

DetectorRun DetectorEngine::detect(const DetectorInputs& inputs) {
  // Photos alone letterbox on the device where the engine can; a .npy row makes the batch a host one.
  if (letterboxes_on_device() && inputs.all_photos()) return detect(inputs.pictures);
  DetectorRun run = detect_letterboxed(letterbox_on_host(inputs, *detector_, config_.imgsz));
  for (std::size_t i = 0; i < run.detections.size(); ++i) {
    if (!inputs.letterboxes[i]) continue;
    for (Detection& d : run.detections[i]) d = detector_->to_original(d, *inputs.letterboxes[i]);
  }
  return run;
}

DetectorRun DetectorEngine::detect_letterboxed(const Tensor& input) {
  const std::int64_t size = config_.imgsz;
  require(input.rank() == 4 && input.dim(0) == engine_->batch() && input.dim(1) == 3 &&
              input.dim(2) == size && input.dim(3) == size,
          "this detector runs batches of ", engine_->batch(), " letterboxed images [", engine_->batch(),
          ", 3, ", size, ", ", size, "], got ", shape_str(input.shape()));
  const auto start = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = engine_->run(input);
  return finish(std::move(outputs),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

DetectorRun DetectorEngine::finish(std::vector<Tensor> outputs, double seconds) const {
  DetectorRun run;
  run.seconds = seconds;
  run.decoded = std::move(outputs.at(0));
  run.detections = outputs.size() > 1 ? detector_->read_selected(outputs[1])
                                      : detector_->select(run.decoded, config_.max_det);
  return run;
}

}  // namespace kiln::pipeline
