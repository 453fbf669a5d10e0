// The box parity gate: pairing by class and overlap, missing and extra boxes, worst IoU and score diff.
#include "pipeline/detector_parity.h"

#include <gtest/gtest.h>

namespace kiln::pipeline {
namespace {

Detection box(float x1, float y1, float x2, float y2, float score, std::int64_t label) {
  return {x1, y1, x2, y2, score, label};
}

TEST(DetectorParity, IouOfBoxes) {
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 10, 10, 1, 0), box(0, 0, 10, 10, 1, 0)), 1.0);
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 10, 10, 1, 0), box(5, 0, 15, 10, 1, 0)), 50.0 / 150.0);
  EXPECT_DOUBLE_EQ(box_iou(box(0, 0, 10, 10, 1, 0), box(20, 20, 30, 30, 1, 0)), 0.0);
}

TEST(DetectorParity, IdenticalDetectionsPass) {
  const std::vector<Detection> d = {box(0, 0, 10, 10, 0.9f, 1), box(20, 20, 40, 40, 0.5f, 2),
                                    box(50, 50, 60, 60, 0.01f, 3)};
  const BoxParity parity = compare_detections(d, d, 0.25, "a.jpg");
  EXPECT_EQ(parity.reference_boxes, 2u);
  EXPECT_EQ(parity.matched, 2u);
  EXPECT_EQ(parity.missing, 0u);
  EXPECT_EQ(parity.extra, 0u);
  EXPECT_DOUBLE_EQ(parity.worst_iou, 1.0);
  EXPECT_DOUBLE_EQ(parity.worst_score_diff, 0.0);
  EXPECT_TRUE(parity.passes());
}

// Two detections of one box (anchors whose boxes coincide) pair with the reference's by score.
TEST(DetectorParity, CoincidingBoxesPairByScore) {
  const std::vector<Detection> d = {box(0, 0, 10, 10, 0.02f, 1), box(0, 0, 10, 10, 0.01f, 1)};
  const std::vector<Detection> reversed = {d[1], d[0]};
  for (const auto& ours : {d, reversed}) {
    const BoxParity parity = compare_detections(ours, d, 0.005, "a.jpg");
    EXPECT_EQ(parity.matched, 2u);
    EXPECT_DOUBLE_EQ(parity.worst_score_diff, 0.0);
    EXPECT_TRUE(parity.passes());
  }
}

TEST(DetectorParity, ShiftedBoxesAndScoresAreMeasured) {
  const std::vector<Detection> reference = {box(0, 0, 100, 100, 0.9f, 1)};
  const BoxParity close = compare_detections({box(1, 0, 101, 100, 0.902f, 1)}, reference, 0.25, "a.jpg");
  EXPECT_EQ(close.matched, 1u);
  EXPECT_NEAR(close.worst_iou, 99.0 * 100 / (101.0 * 100), 1e-9);
  EXPECT_NEAR(close.worst_score_diff, 0.002, 1e-6);
  EXPECT_TRUE(close.passes());
  const BoxParity far = compare_detections({box(15, 0, 115, 100, 0.9f, 1)}, reference, 0.25, "b.jpg");
  EXPECT_EQ(far.matched, 1u);  // IoU 0.74: paired, but under the gate
  EXPECT_FALSE(far.passes());
  const BoxParity score = compare_detections({box(0, 0, 100, 100, 0.8f, 1)}, reference, 0.25, "c.jpg");
  EXPECT_FALSE(score.passes());
  EXPECT_EQ(score.worst_score_image, "c.jpg");
}

TEST(DetectorParity, CountsMissingAndExtraBoxes) {
  const std::vector<Detection> reference = {box(0, 0, 10, 10, 0.9f, 1)};
  // Another class at the same place: the reference box is missing and this one is extra.
  const BoxParity other = compare_detections({box(0, 0, 10, 10, 0.9f, 2)}, reference, 0.25, "a.jpg");
  EXPECT_EQ(other.missing, 1u);
  EXPECT_EQ(other.extra, 1u);
  EXPECT_FALSE(other.passes());
  // A box just above the threshold whose reference lies just below it is neither.
  const BoxParity border =
      compare_detections({box(0, 0, 10, 10, 0.252f, 1)}, {box(0, 0, 10, 10, 0.249f, 1)}, 0.25, "b.jpg");
  EXPECT_EQ(border.missing, 0u);
  EXPECT_EQ(border.extra, 0u);
  EXPECT_TRUE(border.passes());
}

TEST(DetectorParity, TotalsKeepTheWorstImage) {
  BoxParity total;
  BoxParity a;
  a.matched = 2;
  a.worst_iou = 0.95;
  a.worst_iou_image = "a.jpg";
  a.worst_score_diff = 0.001;
  a.worst_score_image = "a.jpg";
  BoxParity b = a;
  b.worst_iou = 0.97;
  b.worst_iou_image = "b.jpg";
  b.worst_score_diff = 0.003;
  b.worst_score_image = "b.jpg";
  total.add(a);
  total.add(b);
  EXPECT_EQ(total.matched, 4u);
  EXPECT_EQ(total.worst_iou_image, "a.jpg");
  EXPECT_EQ(total.worst_score_image, "b.jpg");
}

}  // namespace
}  // namespace kiln::pipeline
