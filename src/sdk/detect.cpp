#include "sdk/detect.h"

#include "families/registry.h"

namespace kiln::embed {

namespace {

const DetectorInfo& detector_family(const std::string& name) {
  if (const DetectorInfo* detector = find_detector(name)) return *detector;
  std::string known;
  for (const DetectorInfo& detector : detectors()) known += cat(known.empty() ? "" : ", ", detector.name);
  throw InvalidArgument(cat("'", name, "' is not a detector family (known: ", known, ")"));
}

}  // namespace

SdkDetector::SdkDetector(const DetectorSource& source, const EngineSettings& settings) : settings_(settings) {
  const DetectorInfo& detector = detector_family(source.family);
  if (settings_.batch > 1) {
    throw InvalidArgument(cat("a detector runs one image at a time, got batch ", settings_.batch));
  }
  if (settings_.backend.empty()) settings_.backend = default_backend();
  select_device(settings_.backend, settings_.device);
  CompileOptions compile;
  compile.threads = settings_.threads;
  compile.strict_backend = settings_.strict_backend;
  compile.tactic_cache = settings_.tactic_cache;
  engine_ = std::make_unique<pipeline::DetectorEngine>(detector, source.checkpoint, source.config, 1,
                                                       settings_.backend, compile);
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
