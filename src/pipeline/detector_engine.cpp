#include "pipeline/detector_engine.h"

#include <algorithm>
#include <chrono>

#include "builder/build_plan.h"
#include "core/error.h"
#include "passes/pass.h"
#include "pipeline/model_loading.h"

namespace kiln::pipeline {

DetectorEngine::DetectorEngine(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                               const std::optional<std::filesystem::path>& config_path, std::int64_t batch,
                               const std::string& backend, const CompileOptions& options)
    : detector_(&detector) {
  DetectorModel model = load_detector(detector, checkpoint, config_path, batch);
  config_ = model.config;
  unused_keys_ = std::move(model.unused_keys);
  BuildOptions build;  // fp32 with every pass, as kiln run builds a classifier checkpoint
  build.opt_level = kMaxPassLevel;
  build.batch = batch;
  build.backend = backend.empty() ? default_backend() : backend;
  build.tactic_cache = options.tactic_cache;
  build.strict_backend = options.strict_backend;
  BuildInput input{std::move(model.graph), ModelConfig{}, std::string(detector.name),
                   checkpoint.filename().string(), ""};
  auto plan = std::make_shared<const Plan>(build_plan(std::move(input), build).plan);
  CompileOptions compile = options;
  compile.batch = batch;
  engine_ = std::make_unique<Engine>(std::move(plan), build.backend, compile);
}

DetectorRun DetectorEngine::detect(const std::vector<Image>& images) {
  const auto batch = static_cast<std::int64_t>(images.size());
  require(batch == engine_->batch(), "this detector runs batches of ", engine_->batch(), " images, got ",
          batch);
  const std::int64_t size = config_.imgsz;
  std::vector<Letterbox> boxes;
  Tensor input(DType::kF32, {batch, 3, size, size});
  for (std::size_t i = 0; i < images.size(); ++i) {
    boxes.push_back(detector_->prepare(images[i], size));
    const Tensor x = letterbox_tensor(boxes.back());
    std::copy(x.f32().begin(), x.f32().end(),
              input.mutable_f32().begin() + static_cast<std::ptrdiff_t>(i * x.f32().size()));
  }
  DetectorRun run;
  const auto start = std::chrono::steady_clock::now();
  run.decoded = engine_->run(input).at(0);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.detections = detector_->select(run.decoded, config_.max_det);
  for (std::size_t i = 0; i < run.detections.size(); ++i) {
    for (Detection& d : run.detections[i]) d = detector_->to_original(d, boxes[i]);
  }
  return run;
}

}  // namespace kiln::pipeline
