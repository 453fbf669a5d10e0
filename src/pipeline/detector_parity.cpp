#include "pipeline/detector_parity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln::pipeline {

void BoxParity::add(const BoxParity& image) {
  reference_boxes += image.reference_boxes;
  matched += image.matched;
  missing += image.missing;
  extra += image.extra;
  if (image.matched > 0 && image.worst_iou < worst_iou) {
    worst_iou = image.worst_iou;
    worst_iou_image = image.worst_iou_image;
  }
  if (image.matched > 0 && image.worst_score_diff > worst_score_diff) {
    worst_score_diff = image.worst_score_diff;
    worst_score_image = image.worst_score_image;
  }
}

double box_iou(const Detection& a, const Detection& b) {
  const auto area = [](const Detection& d) {
    return std::max(0.0, static_cast<double>(d.x2) - d.x1) * std::max(0.0, static_cast<double>(d.y2) - d.y1);
  };
  const double w = std::max(0.0, std::min<double>(a.x2, b.x2) - std::max<double>(a.x1, b.x1));
  const double h = std::max(0.0, std::min<double>(a.y2, b.y2) - std::max<double>(a.y1, b.y1));
  const double inter = w * h, sum = area(a) + area(b) - inter;
  if (sum <= 0.0) return a.x1 == b.x1 && a.y1 == b.y1 && a.x2 == b.x2 && a.y2 == b.y2 ? 1.0 : 0.0;
  return inter / sum;
}

BoxParity compare_detections(const std::vector<Detection>& detections,
                             const std::vector<Detection>& reference, double min_score,
                             const std::string& image) {
  BoxParity parity;
  parity.worst_iou_image = parity.worst_score_image = image;
  std::vector<bool> paired(detections.size(), false);
  for (const Detection& r : reference) {
    if (!(r.score >= min_score)) continue;
    ++parity.reference_boxes;
    std::size_t best = detections.size();
    double best_iou = kPairingIou, best_diff = INFINITY;
    for (std::size_t i = 0; i < detections.size(); ++i) {
      if (paired[i] || detections[i].label != r.label) continue;
      const double iou = box_iou(detections[i], r);
      // Boxes can coincide (clamped to the image's edge, say): an equal overlap goes to the closer score.
      const double diff = std::fabs(static_cast<double>(detections[i].score) - r.score);
      if (iou > best_iou || (iou == best_iou && (best == detections.size() || diff < best_diff))) {
        best_iou = iou;
        best = i;
        best_diff = diff;
      }
    }
    if (best == detections.size()) {
      ++parity.missing;
      continue;
    }
    paired[best] = true;
    ++parity.matched;
    parity.worst_iou = std::min(parity.worst_iou, best_iou);
    const double diff = std::fabs(static_cast<double>(detections[best].score) - r.score);
    parity.worst_score_diff = std::max(parity.worst_score_diff, std::isnan(diff) ? INFINITY : diff);
  }
  for (std::size_t i = 0; i < detections.size(); ++i) {
    if (!paired[i] && detections[i].score >= min_score + kGateMaxScoreDiff) ++parity.extra;
  }
  return parity;
}

void DetectorParityReport::add(const std::string& image, const std::vector<Detection>& detections,
                               const std::vector<Detection>& reference, double min_score) {
  const BoxParity parity = compare_detections(detections, reference, min_score, image);
  total.add(parity);
  images.emplace_back(image, parity);
}

nlohmann::json to_json(const BoxParity& parity) {
  return {{"reference_boxes", parity.reference_boxes},
          {"matched", parity.matched},
          {"missing", parity.missing},
          {"extra", parity.extra},
          {"worst_iou", parity.matched > 0 ? nlohmann::json(parity.worst_iou) : nlohmann::json(nullptr)},
          {"worst_iou_image",
           parity.matched > 0 ? nlohmann::json(parity.worst_iou_image) : nlohmann::json(nullptr)},
          {"worst_score_diff",
           parity.matched > 0 ? nlohmann::json(parity.worst_score_diff) : nlohmann::json(nullptr)},
          {"worst_score_image",
           parity.matched > 0 ? nlohmann::json(parity.worst_score_image) : nlohmann::json(nullptr)},
          {"passed", parity.passes()}};
}

}  // namespace kiln::pipeline
