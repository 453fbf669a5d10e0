// Detection for library callers. A detector is made from a detector plan (`kiln build yolov10 ...`) or
// from a detector family's checkpoint with its config.json (built into a plan in memory, as `kiln run
// --family yolov10` does; pipeline/detector_engine.h); detect() itself only takes an image.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "io/image.h"
#include "pipeline/detector_engine.h"
#include "sdk/sdk_engine.h"

namespace kiln::embed {

struct DetectorSource {
  std::string family;  // a detector family, e.g. "yolov10"
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;  // default: config.json beside the checkpoint
};

struct NamedDetection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners in the original image's pixels
  float score = 0;
  std::int64_t class_index = 0;
  std::string class_name;  // the config's name, else "class N"
};

// Not reentrant (one Engine): one thread at a time.
class SdkDetector {
 public:
  SdkDetector(const DetectorSource& source, const EngineSettings& settings);
  // A detector plan; fails with InvalidArgument naming `name` for a classifier plan.
  SdkDetector(std::shared_ptr<const Plan> plan, const std::string& name, const EngineSettings& settings);

  const std::vector<std::string>& class_names() const { return engine_->config().names; }
  const std::string& backend() const { return engine_->backend(); }
  // The detector's selection for one image, best first, without those scoring below `min_score`.
  std::vector<NamedDetection> detect(const Image& image, float min_score);

 private:
  EngineSettings settings_;
  std::unique_ptr<pipeline::DetectorEngine> engine_;
};

}  // namespace kiln::embed
