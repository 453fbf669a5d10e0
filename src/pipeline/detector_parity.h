// Box parity of a detector with a reference (`kiln eval` on a detector plan): per image, each reference
// box scoring at least `min_score` is paired with the unpaired box of the same class that overlaps it
// most (IoU at least kPairingIou; of boxes overlapping it equally, the one closest in score); the gate
// wants every such box paired with IoU >= kGateMinIou and |score difference| <= kGateMaxScoreDiff, and
// no unpaired box of the engine's scoring min_score + kGateMaxScoreDiff or more (an extra box; a box
// just under the threshold may cross it either way).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/detector_engine.h"

namespace kiln::pipeline {

inline constexpr double kGateMinIou = 0.9;
inline constexpr double kGateMaxScoreDiff = 0.005;
inline constexpr double kPairingIou = 0.5;

struct BoxParity {
  std::size_t reference_boxes = 0;  // reference boxes scoring min_score or more
  std::size_t matched = 0, missing = 0, extra = 0;
  double worst_iou = 1.0;         // lowest IoU of a matched pair
  double worst_score_diff = 0.0;  // largest |score - reference score| of a matched pair
  std::string worst_iou_image, worst_score_image;

  bool passes() const {
    return missing == 0 && extra == 0 && worst_iou >= kGateMinIou && worst_score_diff <= kGateMaxScoreDiff;
  }
  // Adds another image's counts; its worst figures win when worse.
  void add(const BoxParity& image);
};

double box_iou(const Detection& a, const Detection& b);

// One image: `detections` (all the engine's, best first) against the reference's.
BoxParity compare_detections(const std::vector<Detection>& detections,
                             const std::vector<Detection>& reference, double min_score,
                             const std::string& image);

struct DetectorParityReport {
  BoxParity total;
  std::vector<std::pair<std::string, BoxParity>> images;  // per evaluated image, by its name
  std::size_t skipped = 0;                                // unreadable images

  // Compares one image's boxes and adds them to the total.
  void add(const std::string& image, const std::vector<Detection>& detections,
           const std::vector<Detection>& reference, double min_score);
};

nlohmann::json to_json(const BoxParity& parity);

}  // namespace kiln::pipeline
