// A detector run the way classifiers run: its graph built into a plan in memory and compiled through an
// Engine on the chosen backend; images letterboxed in, boxes in original image pixels out.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "families/registry.h"
#include "io/image.h"
#include "runtime/engine.h"

namespace kiln::pipeline {

struct DetectorRun {
  Tensor decoded;  // the graph's output: [N, 4 + classes, anchors]
  // Per image, the detector's selection (up to max_det, best first) in original image pixels.
  std::vector<std::vector<Detection>> detections;
  double seconds = 0;  // the engine's run alone
};

class DetectorEngine {
 public:
  // Loads `checkpoint` with its config.json (pipeline/model_loading.h) for batches of `batch` images and
  // compiles it on `backend` (empty: the default backend).
  DetectorEngine(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                 const std::optional<std::filesystem::path>& config_path, std::int64_t batch,
                 const std::string& backend, const CompileOptions& options = {});

  const YoloConfig& config() const { return config_; }
  const std::vector<std::string>& unused_keys() const { return unused_keys_; }
  const std::string& backend() const { return engine_->backend(); }
  const Engine& engine() const { return *engine_; }
  // `images` must be as many as the engine's batch.
  DetectorRun detect(const std::vector<Image>& images);

 private:
  const DetectorInfo* detector_;
  YoloConfig config_;
  std::vector<std::string> unused_keys_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace kiln::pipeline
