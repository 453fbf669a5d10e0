// COCO-style mAP on cases small enough to work out by hand.
#include "eval/detection_map.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

MapBox box(std::int64_t label, double x1, double y1, double x2, double y2, double score = 1) {
  return {label, x1, y1, x2, y2, score};
}

TEST(DetectionMap, PerfectDetectionsScoreOne) {
  DetectionMap map(3);
  map.add_image({box(0, 10, 10, 50, 60), box(2, 0, 0, 5, 5)},
                {box(2, 0, 0, 5, 5, 0.4), box(0, 10, 10, 50, 60, 0.9)});
  map.add_image({box(0, 100, 0, 200, 40)}, {box(0, 100, 0, 200, 40, 0.2)});
  const MapResult result = map.result();
  EXPECT_DOUBLE_EQ(result.map50, 1.0);
  EXPECT_DOUBLE_EQ(result.map50_95, 1.0);
  EXPECT_EQ(result.images, 2u);
  EXPECT_EQ(result.ground_truth, 3u);
  EXPECT_EQ(result.detections, 3u);
  EXPECT_EQ(result.classes_with_ground_truth, 2u);  // class 1 has none and is left out of the mean
  EXPECT_EQ(result.classes[0].ground_truth, 2u);
  EXPECT_EQ(result.classes[1].ground_truth, 0u);
}

// One ground-truth box; a false positive ranked first, then the true one: recall [0, 1], precision
// [0, 1/2], made non-increasing [1/2, 1/2], so every one of the 101 recall points reads 1/2.
TEST(DetectionMap, AFalsePositiveRankedAboveTheOnlyTruePositive) {
  DetectionMap map(1);
  map.add_image({box(0, 0, 0, 10, 10)}, {box(0, 0, 0, 10, 10, 0.8), box(0, 50, 50, 60, 60, 0.9)});
  EXPECT_DOUBLE_EQ(map.result().map50, 0.5);
  EXPECT_DOUBLE_EQ(map.result().map50_95, 0.5);
  // Ranked below it, the false positive costs nothing: recall 1 is reached at precision 1.
  DetectionMap after(1);
  after.add_image({box(0, 0, 0, 10, 10)}, {box(0, 0, 0, 10, 10, 0.9), box(0, 50, 50, 60, 60, 0.8)});
  EXPECT_DOUBLE_EQ(after.result().map50, 1.0);
}

// Class 0 found perfectly, class 1 never detected (AP 0), class 2 only falsely detected (no ground
// truth: not in the mean); a class-1 box on a class-0 object does not match it.
TEST(DetectionMap, TwoClassesAverage) {
  DetectionMap map(3);
  map.add_image({box(0, 0, 0, 10, 10), box(1, 20, 20, 40, 40)},
                {box(0, 0, 0, 10, 10, 0.9), box(1, 0, 0, 10, 10, 0.8), box(2, 20, 20, 40, 40, 0.7)});
  const MapResult result = map.result();
  EXPECT_DOUBLE_EQ(result.classes[0].ap50(), 1.0);
  EXPECT_DOUBLE_EQ(result.classes[1].ap50(), 0.0);
  EXPECT_EQ(result.classes[2].detections, 1u);
  EXPECT_EQ(result.classes_with_ground_truth, 2u);
  EXPECT_DOUBLE_EQ(result.map50, 0.5);
  EXPECT_DOUBLE_EQ(result.map50_95, 0.5);
}

// IoU 0.58 (a 100 x 58 box inside a 100 x 100 one) matches at thresholds 0.50 and 0.55 only.
TEST(DetectionMap, IouThresholdsCountABoxOnlyUpToItsOverlap) {
  DetectionMap map(1);
  map.add_image({box(0, 0, 0, 100, 100)}, {box(0, 0, 0, 100, 58, 0.5)});
  const MapResult result = map.result();
  EXPECT_DOUBLE_EQ(result.classes[0].ap[0], 1.0);
  EXPECT_DOUBLE_EQ(result.classes[0].ap[1], 1.0);
  for (std::size_t t = 2; t < kMapIouThresholds; ++t) EXPECT_DOUBLE_EQ(result.classes[0].ap[t], 0.0) << t;
  EXPECT_DOUBLE_EQ(result.map50, 1.0);
  EXPECT_DOUBLE_EQ(result.map50_95, 0.2);
}

// Half the ground truth found at precision 1: recall points 0 to 0.50 read 1, the rest 0.
TEST(DetectionMap, RecallBeyondTheLastDetectionReadsZero) {
  DetectionMap map(1);
  map.add_image({box(0, 0, 0, 10, 10), box(0, 20, 0, 30, 10)}, {box(0, 0, 0, 10, 10, 0.9)});
  EXPECT_DOUBLE_EQ(map.result().map50, 51.0 / 101.0);
  DetectionMap none(1);
  none.add_image({box(0, 0, 0, 10, 10)}, {});
  EXPECT_DOUBLE_EQ(none.result().map50, 0.0);
}

// A second detection of a matched box is a false positive; each ground-truth box matches once.
TEST(DetectionMap, EachGroundTruthBoxMatchesOnce) {
  DetectionMap map(1);
  map.add_image({box(0, 0, 0, 10, 10), box(0, 100, 100, 110, 110)},
                {box(0, 0, 0, 10, 10, 0.9), box(0, 0, 0, 10, 10, 0.8), box(0, 100, 100, 110, 110, 0.7)});
  // Ranked: TP, FP, TP: recall [.5, .5, 1], precision [1, .5, 2/3] -> [1, 2/3, 2/3]: 51 points at 1,
  // 50 at 2/3.
  EXPECT_NEAR(map.result().map50, (51.0 + 50.0 * 2.0 / 3.0) / 101.0, 1e-12);
}

// Equal scores rank in image order: the false positive in image 0 comes before the true one in image 1.
TEST(DetectionMap, TiesRankInImageOrder) {
  DetectionMap map(1);
  map.add_image({}, {box(0, 0, 0, 10, 10, 0.5)});
  map.add_image({box(0, 0, 0, 10, 10)}, {box(0, 0, 0, 10, 10, 0.5)});
  EXPECT_DOUBLE_EQ(map.result().map50, 0.5);
  DetectionMap swapped(1);
  swapped.add_image({box(0, 0, 0, 10, 10)}, {box(0, 0, 0, 10, 10, 0.5)});
  swapped.add_image({}, {box(0, 0, 0, 10, 10, 0.5)});
  EXPECT_DOUBLE_EQ(swapped.result().map50, 1.0);
}

TEST(DetectionMap, NoGroundTruthGivesZeroOverNoClasses) {
  DetectionMap map(2);
  map.add_image({}, {box(1, 0, 0, 1, 1, 0.3)});
  const MapResult result = map.result();
  EXPECT_EQ(result.classes_with_ground_truth, 0u);
  EXPECT_DOUBLE_EQ(result.map50, 0.0);
}

TEST(DetectionMap, IouAndThresholds) {
  EXPECT_DOUBLE_EQ(map_box_iou(box(0, 0, 0, 10, 10), box(0, 5, 0, 15, 10)), 50.0 / 150.0);
  EXPECT_DOUBLE_EQ(map_box_iou(box(0, 0, 0, 10, 10), box(0, 10, 0, 20, 10)), 0.0);
  EXPECT_DOUBLE_EQ(map_box_iou(box(0, 0, 0, 0, 10), box(0, 0, 0, 0, 10)), 0.0);  // empty boxes never match
  const auto thresholds = map_iou_thresholds();
  EXPECT_DOUBLE_EQ(thresholds.front(), 0.5);
  EXPECT_DOUBLE_EQ(thresholds[3], 0.65);
  EXPECT_EQ(thresholds.back(), 0.95);
}

}  // namespace
}  // namespace kiln
