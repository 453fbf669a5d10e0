#include "sdk/detect.h"

#include "families/registry.h"
#include "pipeline/detector_plan.h"

namespace kiln::embed {

namespace {

const DetectorInfo& detector_family(const std::string& name) {
  if (const DetectorInfo* detector = find_detector(name)) return *detector;
  std::string known;
  for (const DetectorInfo& detector : detectors()) known += cat(known.empty() ? "" : ", ", detector.name);
  throw InvalidArgument(cat("'", name, "' is not a detector family (known: ", known, ")"));
}

// The settings a detector runs with: one image at a time, the default backend when none is named, the
// device made current.
EngineSettings detector_settings(EngineSettings settings) {
  if (settings.batch < 0 || settings.batch > 1) {
    throw InvalidArgument(cat("a detector runs one image at a time, got batch ", settings.batch));
  }
  if (settings.backend.empty()) settings.backend = default_backend();
  require_backend(settings.backend);
  select_device(settings.backend, settings.device);
  return settings;
}

CompileOptions detector_compile(const EngineSettings& settings) {
  CompileOptions compile;
  compile.batch = 1;
  compile.threads = settings.threads;
  compile.strict_backend = settings.strict_backend;
  compile.tactic_cache = settings.tactic_cache;
  return compile;
}

}  // namespace

SdkDetector::SdkDetector(const DetectorSource& source, const EngineSettings& settings)
    : settings_(detector_settings(settings)) {
  const DetectorInfo& detector = detector_family(source.family);
  engine_ = std::make_unique<pipeline::DetectorEngine>(detector, source.checkpoint, source.config, 1,
                                                       settings_.backend, detector_compile(settings_));
}

SdkDetector::SdkDetector(std::shared_ptr<const Plan> plan, const std::string& name,
                         const EngineSettings& settings)
    : settings_(detector_settings(settings)) {
  if (!plan->detector) {
    throw InvalidArgument(cat(name, ": ", pipeline::plan_kind(*plan),
                              "; a detector needs a detector plan (kiln build yolov10 ...)"));
  }
  engine_ = std::make_unique<pipeline::DetectorEngine>(std::move(plan), name, settings_.backend,
                                                       detector_compile(settings_));
}

std::vector<NamedDetection> SdkDetector::detect(const Image& image, float min_score) {
  select_device(settings_.backend, settings_.device);
  const pipeline::DetectorRun run = engine_->detect({image});
  const std::vector<std::string>& names = class_names();
  std::vector<NamedDetection> found;
  for (const Detection& d : run.detections.at(0)) {
    if (d.score < min_score) continue;
    const auto label = static_cast<std::size_t>(d.label);
    found.push_back({d.x1, d.y1, d.x2, d.y2, d.score, d.label,
                     label < names.size() ? names[label] : cat("class ", label)});
  }
  return found;
}

}  // namespace kiln::embed
