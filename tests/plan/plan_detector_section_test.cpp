// The detector section: written with the detector flag, read back field for field, and the file
// refused when the flag and the section disagree or the section is malformed. Plans without it (every
// classifier plan, and every plan older kilns wrote) keep flag 0 and read as before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "plan/plan_format.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"

namespace kiln {
namespace {

using plan_test::TempDir;

DetectorSection section() {
  DetectorSection s;
  s.model = "yolov10n.yaml";
  s.image_size = 640;
  s.max_det = 300;
  s.class_names = {"person", "bicycle", "traffic light"};
  s.strides = {8, 16, 32};
  s.letterbox_fill = 114;
  return s;
}

std::string error_for(const std::filesystem::path& path) {
  try {
    read_plan(path);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(PlanDetectorSection, RoundTripsWithTheDetectorFlag) {
  const TempDir dir;
  Plan plan = plan_test::every_op_plan();
  plan.detector = section();
  write_plan(dir / "det.kplan", plan);
  const std::vector<std::byte> bytes = plan_test::read_bytes(dir / "det.kplan");
  EXPECT_EQ(static_cast<std::uint32_t>(bytes[12]), plan_format::kDetectorFlag);
  const Plan back = read_plan(dir / "det.kplan");
  ASSERT_TRUE(back.detector.has_value());
  EXPECT_EQ(back.detector->model, "yolov10n.yaml");
  EXPECT_EQ(back.detector->task, "detect");
  EXPECT_EQ(back.detector->image_size, 640);
  EXPECT_EQ(back.detector->max_det, 300);
  EXPECT_EQ(back.detector->class_names, section().class_names);
  EXPECT_EQ(back.detector->strides, (std::vector<std::int64_t>{8, 16, 32}));
  EXPECT_EQ(back.detector->letterbox_fill, 114);
  plan_test::expect_same_graph(plan.graph, back.graph);
  // Written again, the same bytes.
  write_plan(dir / "again.kplan", back);
  EXPECT_EQ(plan_test::read_bytes(dir / "again.kplan"), bytes);
}

TEST(PlanDetectorSection, PlansWithoutOneKeepFlagZero) {
  const TempDir dir;
  write_plan(dir / "plain.kplan", plan_test::every_op_plan());
  const std::vector<std::byte> bytes = plan_test::read_bytes(dir / "plain.kplan");
  EXPECT_EQ(static_cast<std::uint32_t>(bytes[12]), 0u);
  EXPECT_FALSE(plan_test::header_of(bytes).contains("detector"));
  EXPECT_FALSE(read_plan(dir / "plain.kplan").detector.has_value());
}

TEST(PlanDetectorSection, FlagAndSectionMustAgree) {
  const TempDir dir;
  Plan plan = plan_test::every_op_plan();
  plan.detector = section();
  write_plan(dir / "det.kplan", plan);
  const std::vector<std::byte> good = plan_test::read_bytes(dir / "det.kplan");

  plan_test::write_bytes(dir / "no_section.kplan",
                         plan_test::with_header(good, [](nlohmann::json& h) { h.erase("detector"); }));
  EXPECT_NE(error_for(dir / "no_section.kplan").find("header key 'detector'"), std::string::npos)
      << error_for(dir / "no_section.kplan");

  std::vector<std::byte> unflagged = good;
  unflagged[12] = std::byte{0};
  plan_test::reseal(unflagged);
  plan_test::write_bytes(dir / "unflagged.kplan", unflagged);
  EXPECT_NE(error_for(dir / "unflagged.kplan").find("the file's detector flag (0x1) is not set"),
            std::string::npos)
      << error_for(dir / "unflagged.kplan");

  plan_test::write_bytes(dir / "no_names.kplan", plan_test::with_header(good, [](nlohmann::json& h) {
                           h["detector"]["class_names"] = nlohmann::json::array();
                         }));
  EXPECT_NE(error_for(dir / "no_names.kplan").find("header key 'detector.class_names'"), std::string::npos)
      << error_for(dir / "no_names.kplan");

  plan_test::write_bytes(dir / "bad_fill.kplan", plan_test::with_header(good, [](nlohmann::json& h) {
                           h["detector"]["letterbox"]["fill"] = 300;
                         }));
  EXPECT_NE(error_for(dir / "bad_fill.kplan").find("header key 'detector.letterbox.fill'"), std::string::npos)
      << error_for(dir / "bad_fill.kplan");
}

TEST(PlanDetectorSection, WriterRefusesASectionWithoutClasses) {
  const TempDir dir;
  Plan plan = plan_test::every_op_plan();
  plan.detector = section();
  plan.detector->class_names.clear();
  EXPECT_THROW(write_plan(dir / "det.kplan", plan), Error);
  EXPECT_TRUE(dir.entries().empty());
}

}  // namespace
}  // namespace kiln
