// Detector plans: what `kiln build` adds to a detector's plan beyond its graph (the plan's detector
// section, plan/detector_section.h), and what running, benchmarking or evaluating one reads back.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "builder/build_plan.h"
#include "families/registry.h"
#include "manifest/manifest.h"
#include "pipeline/model_source.h"
#include "plan/plan.h"

namespace kiln::pipeline {

// The detector section for `config` and the graph the family built from it; the strides are read off
// the graph's detect_decode layers.
DetectorSection detector_section(const YoloConfig& config, const Graph& graph);

// The bundle config of a detector plan, for tools that read only the bundle: the model, its class names
// and input size; the input is RGB / 255 (mean 0, std 1), letterboxed.
ModelConfig detector_bundle_config(const YoloConfig& config);

// What the detector's postprocessing reads, back from a plan's section.
YoloConfig yolo_config(const DetectorSection& section);

// A detector family's checkpoint and config.json as `kiln build` loads it, at the config's imgsz. FP8
// calibration images are letterboxed.
ModelSource load_detector_source(const DetectorInfo& detector, const std::filesystem::path& checkpoint,
                                 const std::optional<std::filesystem::path>& config_path,
                                 const std::string& digest);

// A loaded detector built into a plan in memory (no checkpoint digest), with its detector section.
Plan build_detector_in_memory(const DetectorInfo& detector, DetectorModel model,
                              const std::string& checkpoint_name, const BuildOptions& options);

// "a yolov10 detector plan" or "a timm_resnest classifier plan".
std::string plan_kind(const Plan& plan);

// The detector `plan` is for, its section checked against the graph (classes, input size). Fails with
// one line naming `name` when the plan is a classifier's or is for a detector this kiln does not know.
const DetectorInfo& plan_detector(const Plan& plan, const std::string& name);

// Fails naming `name` when `plan` is a detector plan: `use` says what wanted a classifier plan.
void require_classifier_plan(const Plan& plan, const std::string& name, std::string_view use);

}  // namespace kiln::pipeline
