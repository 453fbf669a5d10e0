// The detector side of `kiln run` and `kiln eval`: what those commands hand over when the model is a
// detector (a detector plan, or --family yolov10 with a checkpoint).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace kiln::cli {

struct DetectorRunRequest {
  std::filesystem::path plan_path;   // empty: run --checkpoint
  std::shared_ptr<const Plan> plan;  // loaded from plan_path
  std::string family;                // --family, when given
  std::filesystem::path checkpoint;
  std::optional<std::filesystem::path> config;
  std::vector<std::filesystem::path> inputs;
  std::string backend;
  bool strict_backend = false;
  std::string tactic_cache;
  double min_score = 0.25;
  std::optional<std::filesystem::path> save_output, json, draw;
};

// Whether `kiln run` takes the detector path: --family names a detector, or the plan is a detector's.
bool runs_detector(const std::string& family, const Plan* plan);
void run_detector(const DetectorRunRequest& request);

struct DetectorEvalRequest {
  std::filesystem::path plan_path;
  std::shared_ptr<const Plan> plan;
  std::string data;
  std::optional<std::filesystem::path> reference;  // a plan, or a checkpoint built in memory at fp32
  std::string family;
  std::optional<std::filesystem::path> config;
  std::string backend;
  bool strict_backend = false;
  std::optional<std::int64_t> batch;
  std::optional<std::size_t> images;
  bool strict = false;
  double min_score = 0.25;              // box parity: the reference boxes compared
  bool min_score_given = false;         // --min-score was given (refused where no box parity runs)
  std::optional<double> map_min_score;  // mAP: the detections ranked (default pipeline::kMapMinScore)
  std::optional<std::filesystem::path> json;
};

// On a labelled detection set (data/yolo_dataset.h): mAP against the labels, and box parity with
// --reference when given. On other images: box parity with the reference (pipeline/detector_parity.h).
// Box parity fails the command (exit 1) after the report when its gate does not pass.
void eval_detector(const DetectorEvalRequest& request);

}  // namespace kiln::cli
