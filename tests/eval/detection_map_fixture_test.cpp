// DetectionMap against an independent numpy implementation of COCOeval (tools/goldens/coco_map.py):
// the shipped Fashion-MNIST set's ground truth with jittered, mislabelled, duplicated and spurious
// detections whose scores often tie, and the mAP numpy computed for them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "eval/detection_map.h"

namespace kiln {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(KILN_TEST_DATA_DIR) / "detection_map" / "coco_map_fixture.json";
constexpr double kTolerance = 1e-12;

std::vector<MapBox> boxes(const nlohmann::json& rows) {
  std::vector<MapBox> result;
  for (const auto& row : rows) {
    MapBox box{static_cast<std::int64_t>(row.at(0).get<double>()), row.at(1), row.at(2), row.at(3),
               row.at(4)};
    if (row.size() > 5) box.score = row.at(5);
    result.push_back(box);
  }
  return result;
}

TEST(DetectionMapFixture, AgreesWithTheNumpyImplementation) {
  std::ifstream file(kFixture);
  ASSERT_TRUE(file) << kFixture;
  const nlohmann::json fixture = nlohmann::json::parse(file);
  const auto classes = fixture.at("classes").get<std::size_t>();
  DetectionMap map(classes);
  for (const auto& image : fixture.at("images"))
    map.add_image(boxes(image.at("ground_truth")), boxes(image.at("detections")));
  const MapResult result = map.result();
  const nlohmann::json& expected = fixture.at("expected");
  EXPECT_GT(result.map50, 0.1);  // the fixture is not a trivial case
  EXPECT_NEAR(result.map50, expected.at("map50").get<double>(), kTolerance);
  EXPECT_NEAR(result.map50_95, expected.at("map50_95").get<double>(), kTolerance);
  for (std::size_t c = 0; c < classes; ++c) {
    const nlohmann::json& ap50 = expected.at("per_class_ap50").at(c);
    ASSERT_EQ(ap50.is_null(), result.classes[c].ground_truth == 0) << c;
    if (ap50.is_null()) continue;
    EXPECT_NEAR(result.classes[c].ap50(), ap50.get<double>(), kTolerance) << c;
    EXPECT_NEAR(result.classes[c].ap50_95(), expected.at("per_class_ap50_95").at(c).get<double>(), kTolerance)
        << c;
  }
}

}  // namespace
}  // namespace kiln
