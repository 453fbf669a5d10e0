// Box parity of a detector variant with the fp32 build, as a study reports and judges it: the counts
// and worst figures of pipeline/detector_parity over every held-out image, the minimum score that chose
// the compared boxes, and the gate they were held to (the seed system's: every reference box matched
// with IoU >= 0.9 and |score difference| <= 0.005, none missing or extra).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace kiln {

struct BoxParitySummary {
  double min_score = 0.25;  // reference boxes scoring this much or more are compared
  double gate_min_iou = 0.9;
  double gate_max_score_diff = 0.005;
  std::size_t images = 0;
  std::size_t reference_boxes = 0;
  std::size_t matched = 0, missing = 0, extra = 0;
  double worst_iou = 1.0;         // lowest IoU of a matched pair (1 with none)
  double worst_score_diff = 0.0;  // largest |score difference| of a matched pair
  std::string worst_iou_image, worst_score_image;

  bool passes() const {
    return missing == 0 && extra == 0 && worst_iou >= gate_min_iou && worst_score_diff <= gate_max_score_diff;
  }
  // No reference box reached min_score: the gate passes having compared nothing.
  bool compared_nothing() const { return reference_boxes == 0; }
};

// "38 of 40 boxes matched, 2 missing, 1 extra; worst IoU 0.912, worst |score diff| 0.0061: fails the gate"
std::string parity_text(const BoxParitySummary& parity);

// What the gate wants, with the figures that miss it: "2 missing, worst IoU 0.85 < 0.9"; empty on a pass.
std::string parity_failures(const BoxParitySummary& parity);

nlohmann::json to_json(const BoxParitySummary& parity);

}  // namespace kiln
