// What a detector study runs: the classifier study's [study] keys that apply to detectors (variants,
// baseline, timing, images, every, the demo, the family's words; study_spec.h) and the detector's own:
//
//   [study]
//   parity_min_score = 0.25      # box parity compares the fp32 build's boxes scoring this much or more
//   map_min_score = 0.001        # mAP ranks every detection scoring this much or more (COCO's practice)
//   max_map_drop = 0.01          # an FP8 variant ships losing at most this mAP@0.5:0.95 ...
//   max_map50_drop = 0.01        # ... and this mAP@0.5 against the baseline (fractions, 95% upper bound)
//   bootstrap_resamples = 1000   # the paired bootstrap over held-out images behind those intervals
//   bootstrap_seed = 1
//   demo_config = "..."          # the demo checkpoint's config.json (relative to the manifest)
//
// The classifier's accuracy keys (max_agreement_drop, max_top1_drop, auto_target, sensitivity_images)
// and the auto recipe are refused: they compare top-1 classes, which a detector does not have.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "manifest/manifest.h"
#include "study/study_spec.h"

namespace kiln {

struct DetectorStudySpec {
  StudySpec study;
  double parity_min_score = 0.25;
  double map_min_score = 0.001;
  double max_map_drop = 0.01;
  double max_map50_drop = 0.01;
  std::size_t bootstrap_resamples = 1000;
  std::uint64_t bootstrap_seed = 1;
  std::optional<std::filesystem::path> demo_config;  // resolved against the manifest's folder
  nlohmann::json to_json() const;
};

// Fails naming the manifest and the [study] key on a bad value, a classifier-only key or an auto variant.
DetectorStudySpec detector_study_spec_from_manifest(const Manifest& manifest);

// Fails naming the variant when it cannot be studied on a detector (the auto recipe).
void require_detector_variant(const StudyVariant& variant);

// The [study] keys only a detector study reads (a classifier's study refuses them as unknown).
const std::vector<std::string>& detector_study_keys();

}  // namespace kiln
