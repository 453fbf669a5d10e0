#include "study/box_parity_summary.h"

#include "core/error.h"
#include "study/report_format.h"

namespace kiln {

std::string parity_text(const BoxParitySummary& p) {
  std::string text = cat(p.matched, " of ", p.reference_boxes, " boxes scoring ", fixed(p.min_score, 3),
                         " or more matched, ", p.missing, " missing, ", p.extra, " extra");
  if (p.matched > 0) {
    text += cat("; worst IoU ", fixed(p.worst_iou, 3), ", worst |score diff| ", fixed(p.worst_score_diff, 4));
  }
  if (p.compared_nothing()) text += " (no fp32 box reached the minimum score: nothing was compared)";
  return text + (p.passes() ? ": passes the gate" : ": fails the gate");
}

std::string parity_failures(const BoxParitySummary& p) {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
  if (p.missing > 0) add(cat(p.missing, " missing"));
  if (p.extra > 0) add(cat(p.extra, " extra"));
  if (p.worst_iou < p.gate_min_iou)
    add(cat("worst IoU ", fixed(p.worst_iou, 3), " < ", fixed(p.gate_min_iou, 2), " (", p.worst_iou_image,
            ")"));
  if (p.worst_score_diff > p.gate_max_score_diff)
    add(cat("worst |score diff| ", fixed(p.worst_score_diff, 4), " > ", fixed(p.gate_max_score_diff, 3), " (",
            p.worst_score_image, ")"));
  return text;
}

nlohmann::json to_json(const BoxParitySummary& p) {
  return {{"min_score", p.min_score},
          {"gate", {{"min_iou", p.gate_min_iou}, {"max_score_diff", p.gate_max_score_diff}}},
          {"images", p.images},
          {"reference_boxes", p.reference_boxes},
          {"matched", p.matched},
          {"missing", p.missing},
          {"extra", p.extra},
          {"worst_iou", p.worst_iou},
          {"worst_iou_image", p.worst_iou_image},
          {"worst_score_diff", p.worst_score_diff},
          {"worst_score_image", p.worst_score_image},
          {"passes", p.passes()}};
}

}  // namespace kiln
