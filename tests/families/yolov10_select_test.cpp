// The detector's host selection and the detect_select operator are one algorithm: the operator's rows,
// read back as detections, are the host's detections field for field.
#include <gtest/gtest.h>

#include "backends/cpu/reference/kernels.h"
#include "core/error.h"
#include "families/yolov10/postprocess.h"
#include "testing/random_tensor.h"

namespace kiln {
namespace {

TEST(Yolov10Select, OperatorRowsAreTheHostDetections) {
  // Scores rounded to tenths, so that both stages meet ties.
  Tensor decoded = testing::random_tensor({2, 4 + 7, 50}, 5, 0.0f, 1.0f);
  for (float& v : decoded.mutable_f32()) v = static_cast<float>(static_cast<int>(v * 10)) / 10;
  const auto host = select_detections(decoded, 12);
  const auto rows = detections_from_rows(reference::detect_select(decoded, DetectSelectAttrs{12}));
  ASSERT_EQ(rows.size(), host.size());
  for (std::size_t n = 0; n < host.size(); ++n) {
    ASSERT_EQ(rows[n].size(), 12u);
    ASSERT_EQ(host[n].size(), 12u);
    for (std::size_t r = 0; r < host[n].size(); ++r) {
      SCOPED_TRACE(::testing::Message() << "image " << n << " row " << r);
      const Detection &a = rows[n][r], &b = host[n][r];
      EXPECT_EQ(a.label, b.label);
      EXPECT_EQ(a.score, b.score);
      EXPECT_EQ(a.x1, b.x1);
      EXPECT_EQ(a.y1, b.y1);
      EXPECT_EQ(a.x2, b.x2);
      EXPECT_EQ(a.y2, b.y2);
    }
  }
  EXPECT_THROW(detections_from_rows(decoded), Error);  // 50 values a row, not 6
}

}  // namespace
}  // namespace kiln
