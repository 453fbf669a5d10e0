// Mean average precision of a detector against ground-truth boxes, as COCO's evaluation defines it
// (pycocotools COCOeval for boxes, one area range, every detection given): per class, detections are
// ranked by score over all images (ties keep image order, then the order given); at each IoU threshold
// 0.50, 0.55, ..., 0.95 a detection matches the unmatched ground-truth box of its class in its image
// that it overlaps most, when that IoU is at least the threshold; precision is made non-increasing in
// recall and read at the 101 recalls 0, 0.01, ..., 1 (0 beyond the highest recall reached), and their
// mean is the class's AP. mAP is the mean over classes that have ground truth.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

inline constexpr std::size_t kMapIouThresholds = 10;  // 0.50:0.05:0.95

struct MapBox {
  std::int64_t label = 0;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // pixels
  double score = 1;                       // detections only
};

struct ClassAp {
  std::size_t ground_truth = 0, detections = 0;
  // AP at each IoU threshold; meaningful only when ground_truth > 0.
  std::array<double, kMapIouThresholds> ap{};
  double ap50() const { return ap[0]; }
  double ap50_95() const;
};

struct MapResult {
  std::vector<ClassAp> classes;  // by class id
  std::size_t images = 0, ground_truth = 0, detections = 0;
  std::size_t classes_with_ground_truth = 0;
  double map50 = 0, map50_95 = 0;  // 0 when no class has ground truth
};

// The IoU thresholds, as numpy.linspace(0.5, 0.95, 10) computes them (COCOeval's iouThrs).
std::array<double, kMapIouThresholds> map_iou_thresholds();

double map_box_iou(const MapBox& a, const MapBox& b);

// Collects images one at a time, then computes the result.
class DetectionMap {
 public:
  explicit DetectionMap(std::size_t num_classes);
  // One image's ground truth and detections (labels must be below num_classes).
  void add_image(const std::vector<MapBox>& ground_truth, const std::vector<MapBox>& detections);
  MapResult result() const;

 private:
  struct Ranked {
    double score;
    std::size_t image, order;  // the tie-break: image order, then the order given
    bool operator<(const Ranked& other) const;
  };
  // Per IoU threshold, whether each ranked detection of `label` matches.
  std::vector<std::array<bool, kMapIouThresholds>> match_class(std::int64_t label,
                                                               const std::vector<Ranked>& ranked) const;
  ClassAp class_ap(std::int64_t label) const;

  std::size_t num_classes_;
  std::vector<std::vector<MapBox>> ground_truth_, detections_;  // per image
};

// COCO's 101-point interpolated AP of one ranked list: `matched[i]` for the i-th best detection.
double interpolated_ap(const std::vector<bool>& matched, std::size_t ground_truth);

}  // namespace kiln
