// A detector study's ship / no-ship decision for each FP8 variant, from the held-out images:
//  - ship when its median speed-up reaches min_speedup, no output is NaN/Inf, its boxes pass the
//    parity gate against the fp32 build, and the upper 95% bound of each mAP drop against the baseline
//    (mAP@0.5:0.95 and mAP@0.5, paired bootstrap, map_bootstrap.h) is within its threshold;
//  - do not ship when it is too slow, gives NaN/Inf, fails the parity gate, or a drop's lower bound
//    exceeds its threshold;
//  - otherwise the images cannot tell: a threshold lies inside a drop's interval. Unlike a rate's, a
//    bootstrap interval has no closed form to say how many images would settle it; more held-out
//    images narrow it roughly as one over their square root.
// The study ships the fastest variant that ships; it cannot tell when none ships and one cannot tell.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "eval/detection_map.h"
#include "study/box_parity_summary.h"
#include "study/detector_study_spec.h"
#include "study/map_bootstrap.h"
#include "study/study_decision.h"

namespace kiln {

struct VariantResult;

// One variant's boxes on the held-out images: against fp32 and against the labels.
struct DetectorQuality {
  BoxParitySummary parity;      // against the fp32 build
  MapResult map;                // against the labels, every held-out image
  std::optional<MapDrop> drop;  // against the baseline (absent for the baseline itself)
};

struct DetectorVerdict {
  std::string variant;
  ShipOutcome outcome = ShipOutcome::kCannotTell;
  bool speed_passes = false;
  bool speed_low_end_under = false;
  bool non_finite = false;
  bool parity_passes = false;
  std::vector<CriterionVerdict> criteria;  // map50_95_drop_vs_baseline, map50_drop_vs_baseline
  std::vector<std::string> reasons;        // one per criterion, with its figures
};

struct DetectorDecision {
  ShipOutcome outcome = ShipOutcome::kDoNotShip;
  std::string variant;  // the FP8 variant to ship: the fastest that ships
  std::int64_t held_out_images = 0;
  std::vector<std::string> reasons;       // per FP8 variant, one line
  std::vector<DetectorVerdict> verdicts;  // per FP8 variant, in study order
  bool speed_judged = true;               // false: the timings were taken on a loaded machine
};

// One FP8 variant: `timing` its speed and NaN/Inf counts (its eval's), `quality` its boxes. Without
// `timings_sound` (a loaded machine) its speed is not judged and it cannot ship.
DetectorVerdict judge_detector_variant(const DetectorStudySpec& spec, const VariantResult& timing,
                                       const DetectorQuality& quality, bool timings_sound = true);

// Every FP8 variant of `variants` (quality[i] is variants[i]'s).
DetectorDecision decide_detector(const DetectorStudySpec& spec, const std::vector<VariantResult>& variants,
                                 const std::vector<DetectorQuality>& quality, bool timings_sound = true);

// Any NaN/Inf in a variant's outputs: its held-out images' or its stress inputs'.
bool has_non_finite(const VariantResult& r);

nlohmann::json to_json(const DetectorDecision& decision);

}  // namespace kiln
