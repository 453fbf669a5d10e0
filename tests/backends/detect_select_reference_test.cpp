// detect_select's reference kernel against selections worked out by hand: the best score as std::max
// takes it (a NaN first score makes the best NaN, a later one is passed over), ties to the lower anchor
// and flat index, NaN below every number, corners from centre and size; and shape inference's refusal of
// fewer anchors than detections.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference/kernels.h"
#include "core/error.h"
#include "graph/shape_inference.h"

namespace kiln {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One image, 4 anchors, 2 classes. Anchor a's box is centred at (10a, 20), 4 wide and 2 high. Best
// scores: anchor 0 0.9, anchor 1 NaN (its first score), anchor 2 0.2 (its NaN comes second), anchor 3 0.7.
Tensor four_anchors() {
  Tensor t(DType::kF32, {1, 6, 4});
  const std::vector<float> values = {0,   10,   20,   30,     // centre x
                                     20,  20,   20,   20,     // centre y
                                     4,   4,    4,    4,      // width
                                     2,   2,    2,    2,      // height
                                     0.5, kNaN, 0.2f, 0.7f,   // class 0
                                     0.9, 0.99, kNaN, 0.7f};  // class 1
  std::copy(values.begin(), values.end(), t.mutable_f32().begin());
  return t;
}

struct Row {
  float x1, y1, x2, y2, score, label;
};

// Detection rows flattened as the operator writes them.
std::vector<float> rows(const std::vector<Row>& expected) {
  std::vector<float> flat;
  for (const Row& r : expected) flat.insert(flat.end(), {r.x1, r.y1, r.x2, r.y2, r.score, r.label});
  return flat;
}

std::vector<float> values(const Tensor& t) { return {t.f32().begin(), t.f32().end()}; }

TEST(DetectSelectReference, TwoStagesWithTiesAndNaN) {
  const Tensor x = four_anchors();
  // Kept anchors 0 and 3; their scores 0.5, 0.9, 0.7, 0.7: the two 0.7 tie, the lower flat index first.
  const Tensor two = reference::detect_select(x, DetectSelectAttrs{2});
  ASSERT_EQ(two.shape(), (Shape{1, 2, 6}));
  EXPECT_EQ(values(two), rows({{-2, 19, 2, 21, 0.9f, 1}, {28, 19, 32, 21, 0.7f, 0}}));
  // Anchor 2 joins (0.2 ranks above anchor 1's NaN); its NaN score ranks below every number.
  const Tensor three = reference::detect_select(x, DetectSelectAttrs{3});
  EXPECT_EQ(values(three),
            rows({{-2, 19, 2, 21, 0.9f, 1}, {28, 19, 32, 21, 0.7f, 0}, {28, 19, 32, 21, 0.7f, 1}}));
  // Anchor 1 is kept last, but once kept its 0.99 is the best score of all.
  const Tensor four = reference::detect_select(x, DetectSelectAttrs{4});
  EXPECT_EQ(values(four), rows({{8, 19, 12, 21, 0.99f, 1},
                                {-2, 19, 2, 21, 0.9f, 1},
                                {28, 19, 32, 21, 0.7f, 0},
                                {28, 19, 32, 21, 0.7f, 1}}));
  EXPECT_THROW(reference::detect_select(x, DetectSelectAttrs{5}), Error);
}

TEST(DetectSelectReference, ShapeInferenceNeedsMaxDetAnchors) {
  Graph graph;
  const ValueId x = graph.add_input("decoded", {-1, 6, 4});
  graph.mark_output(graph.add_node(OpKind::kDetectSelect, "head.select", {x}, DetectSelectAttrs{4}));
  EXPECT_EQ(infer_shapes(graph, {{3, 6, 4}}).back(), (Shape{3, 4, 6}));

  // The graph infers shapes as nodes are added: too few anchors fail there, naming the layer.
  Graph too_few;
  const ValueId y = too_few.add_input("decoded", {-1, 6, 4});
  try {
    too_few.add_node(OpKind::kDetectSelect, "head.select", {y}, DetectSelectAttrs{5});
    FAIL() << "expected an error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("head.select"), std::string::npos) << message;
    EXPECT_NE(message.find("anchors"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace kiln
