// The detector's host selection and the detect_select operator share one algorithm; what is left to
// check is the row layout: the operator's rows, read back by detections_from_rows, are the host's
// detections field for field, in order.
#include <gtest/gtest.h>

#include <array>

#include "reference/kernels.h"
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
      const auto fields = [](const Detection& d) {
        return std::array<float, 6>{d.x1, d.y1, d.x2, d.y2, d.score, static_cast<float>(d.label)};
      };
      EXPECT_EQ(fields(rows[n][r]), fields(host[n][r]));
    }
  }
  EXPECT_THROW(detections_from_rows(decoded), Error);  // 50 values a row, not 6
}

}  // namespace
}  // namespace kiln
