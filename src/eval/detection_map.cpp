#include "eval/detection_map.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>

namespace kiln {

namespace {

constexpr std::size_t kRecallPoints = 101;  // 0:0.01:1

// numpy.linspace(start, stop, num): i * ((stop - start) / (num - 1)) + start, the last one exactly stop.
double linspace_at(double start, double stop, std::size_t num, std::size_t i) {
  if (i + 1 == num) return stop;
  return static_cast<double>(i) * ((stop - start) / static_cast<double>(num - 1)) + start;
}

}  // namespace

double ClassAp::ap50_95() const {
  return std::accumulate(ap.begin(), ap.end(), 0.0) / static_cast<double>(ap.size());
}

std::array<double, kMapIouThresholds> map_iou_thresholds() {
  std::array<double, kMapIouThresholds> thresholds{};
  for (std::size_t i = 0; i < thresholds.size(); ++i)
    thresholds[i] = linspace_at(0.5, 0.95, kMapIouThresholds, i);
  return thresholds;
}

// As COCO's bbox IoU: no overlap (or an empty box) is 0.
double map_box_iou(const MapBox& a, const MapBox& b) {
  const double w = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const double h = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (!(w > 0) || !(h > 0)) return 0.0;
  const double inter = w * h;
  return inter / ((a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter);
}

double interpolated_ap(const std::vector<bool>& matched, std::size_t ground_truth) {
  assert(ground_truth > 0);
  const std::size_t n = matched.size();
  std::vector<double> recall(n), precision(n);
  double tp = 0, fp = 0;
  for (std::size_t i = 0; i < n; ++i) {
    (matched[i] ? tp : fp) += 1;
    recall[i] = tp / static_cast<double>(ground_truth);
    // COCOeval adds np.spacing(1) to the denominator.
    precision[i] = tp / (tp + fp + std::numeric_limits<double>::epsilon());
  }
  for (std::size_t i = n; i-- > 1;) precision[i - 1] = std::max(precision[i - 1], precision[i]);
  double sum = 0;
  for (std::size_t r = 0; r < kRecallPoints; ++r) {
    const double level = linspace_at(0.0, 1.0, kRecallPoints, r);
    const auto at = std::lower_bound(recall.begin(), recall.end(), level);  // searchsorted, side left
    if (at == recall.end()) break;
    sum += precision[static_cast<std::size_t>(at - recall.begin())];
  }
  return sum / static_cast<double>(kRecallPoints);
}

DetectionMap::DetectionMap(std::size_t num_classes) : num_classes_(num_classes) {}

bool DetectionMap::Ranked::operator<(const Ranked& other) const {
  if (score != other.score) return score > other.score;
  if (image != other.image) return image < other.image;
  return order < other.order;
}

void DetectionMap::add_image(const std::vector<MapBox>& ground_truth, const std::vector<MapBox>& detections) {
  ground_truth_.push_back(ground_truth);
  detections_.push_back(detections);
}

std::vector<std::array<bool, kMapIouThresholds>> DetectionMap::match_class(
    std::int64_t label, const std::vector<Ranked>& ranked) const {
  const auto thresholds = map_iou_thresholds();
  std::vector<std::array<bool, kMapIouThresholds>> matched(ranked.size());
  // Per image and threshold, which of its ground-truth boxes are taken; matching is per image, so
  // walking the global ranking visits each image's detections best first.
  std::vector<std::vector<std::array<bool, kMapIouThresholds>>> taken(ground_truth_.size());
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const std::vector<MapBox>& truths = ground_truth_[ranked[i].image];
    const MapBox& detection = detections_[ranked[i].image][ranked[i].order];
    auto& used = taken[ranked[i].image];
    if (used.empty()) used.resize(truths.size());
    for (std::size_t t = 0; t < kMapIouThresholds; ++t) {
      std::size_t best = truths.size();
      double best_iou = thresholds[t];
      for (std::size_t g = 0; g < truths.size(); ++g) {
        if (truths[g].label != label || used[g][t]) continue;
        const double iou = map_box_iou(detection, truths[g]);
        if (iou < best_iou) continue;
        best_iou = iou;  // an equal IoU moves to the later box, as COCOeval's loop does
        best = g;
      }
      if (best == truths.size()) continue;
      used[best][t] = true;
      matched[i][t] = true;
    }
  }
  return matched;
}

ClassAp DetectionMap::class_ap(std::int64_t label) const {
  ClassAp result;
  std::vector<Ranked> ranked;
  for (std::size_t image = 0; image < ground_truth_.size(); ++image) {
    for (const MapBox& box : ground_truth_[image]) result.ground_truth += box.label == label ? 1 : 0;
    for (std::size_t order = 0; order < detections_[image].size(); ++order) {
      const MapBox& box = detections_[image][order];
      if (box.label == label) ranked.push_back({box.score, image, order});
    }
  }
  result.detections = ranked.size();
  if (result.ground_truth == 0) return result;
  std::sort(ranked.begin(), ranked.end());
  const auto matched = match_class(label, ranked);
  for (std::size_t t = 0; t < kMapIouThresholds; ++t) {
    std::vector<bool> column(matched.size());
    for (std::size_t i = 0; i < matched.size(); ++i) column[i] = matched[i][t];
    result.ap[t] = interpolated_ap(column, result.ground_truth);
  }
  return result;
}

MapResult DetectionMap::result() const {
  MapResult result;
  result.images = ground_truth_.size();
  for (std::size_t label = 0; label < num_classes_; ++label) {
    result.classes.push_back(class_ap(static_cast<std::int64_t>(label)));
    const ClassAp& ap = result.classes.back();
    result.ground_truth += ap.ground_truth;
    result.detections += ap.detections;
    if (ap.ground_truth == 0) continue;
    ++result.classes_with_ground_truth;
    result.map50 += ap.ap50();
    result.map50_95 += ap.ap50_95();
  }
  if (result.classes_with_ground_truth > 0) {
    result.map50 /= static_cast<double>(result.classes_with_ground_truth);
    result.map50_95 /= static_cast<double>(result.classes_with_ground_truth);
  }
  return result;
}

}  // namespace kiln
