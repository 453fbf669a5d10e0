// YOLO label files, data.yaml and the layouts a detection set comes in: what they hold, and the one-line
// errors (file and line) for what they must not.
#include "data/yolo_labels.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data/yolo_data_yaml.h"
#include "data/yolo_dataset.h"
#include "data_set_fixtures.h"

namespace kiln {
namespace {

using testing::ScratchDir;

std::string labels_error(const std::string& text, std::size_t classes = 10) {
  try {
    parse_yolo_labels(text, "a.txt", classes);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

std::string yaml_error(const std::string& text) {
  try {
    parse_yolo_data_yaml(text, "data.yaml");
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error for: " << text;
  return "";
}

TEST(YoloLabels, ReadsLinesOfClassAndNormalisedBox) {
  const auto boxes = parse_yolo_labels("3 0.5 0.25 0.1 1\n\n  \t\r\n0\t0 1e-1 0.2 0.30\r\n", "a.txt", 10);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0].label, 3);
  EXPECT_DOUBLE_EQ(boxes[0].cx, 0.5);
  EXPECT_DOUBLE_EQ(boxes[0].cy, 0.25);
  EXPECT_DOUBLE_EQ(boxes[0].width, 0.1);
  EXPECT_DOUBLE_EQ(boxes[0].height, 1.0);
  EXPECT_EQ(boxes[1].label, 0);
  EXPECT_DOUBLE_EQ(boxes[1].cy, 0.1);
  EXPECT_DOUBLE_EQ(boxes[1].height, 0.3);
  EXPECT_TRUE(parse_yolo_labels("", "a.txt", 1).empty());
}

TEST(YoloLabels, ErrorsNameTheFileAndLine) {
  EXPECT_NE(labels_error("0 0.5 0.5 0.1 0.1\n1 0.5 0.5 0.1\n").find("a.txt:2: expected 5 fields"),
            std::string::npos);
  EXPECT_NE(labels_error("1 0.5 0.5 0.1 0.1 0.7 0.2")
                .find("a.txt:1: expected 5 fields (class cx cy w h), got more"),
            std::string::npos);
  EXPECT_NE(labels_error("\n\n0 1.5 0.5 0.1 0.1").find("a.txt:3: cx \"1.5\" is outside [0, 1]"),
            std::string::npos);
  EXPECT_NE(labels_error("0 0.5 -0.1 0.1 0.1").find("cy \"-0.1\" is outside [0, 1]"), std::string::npos);
  EXPECT_NE(labels_error("0 0.5 0.5 nan 0.1").find("a.txt:1: w \"nan\" is not a finite number"),
            std::string::npos);
  EXPECT_NE(labels_error("0 0.5 0.5 0.1 inf").find("h \"inf\" is not a finite number"), std::string::npos);
  EXPECT_NE(labels_error("0 0.5 0.5 0.1 0.1x").find("is not a finite number"), std::string::npos);
  EXPECT_NE(labels_error("10 0.5 0.5 0.1 0.1").find("a.txt:1: class 10 but there are 10 class names"),
            std::string::npos);
  EXPECT_NE(labels_error("-1 0.5 0.5 0.1 0.1").find("class \"-1\" is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(labels_error("1.0 0.5 0.5 0.1 0.1").find("is not a non-negative integer"), std::string::npos);
  // A long line is quoted in part, and a message stays one line.
  const std::string message = labels_error("0 0.5 0.5 0.1 " + std::string(500, '7'));
  EXPECT_LT(message.size(), 300u);
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST(YoloLabels, LabelPathFollowsTheUltralyticsConvention) {
  EXPECT_EQ(yolo_label_path("/d/images/val/a.b.jpg"), std::filesystem::path("/d/labels/val/a.b.txt"));
  EXPECT_EQ(yolo_label_path("/images/x/images/val/c.png"),
            std::filesystem::path("/images/x/labels/val/c.txt"));
  EXPECT_EQ(yolo_label_path("/d/pictures/c.png"), std::nullopt);
}

TEST(YoloLabels, AMissingFileHoldsNoObjectsAndAFileIsRead) {
  ScratchDir dir;
  EXPECT_TRUE(read_yolo_labels(dir.file("none.txt"), 3).empty());
  testing::write_text(dir.file("one.txt"), "2 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2 0.1\n");
  try {
    read_yolo_labels(dir.file("one.txt"), 3);
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(dir.file("one.txt").string() + ":2: expected 5 fields"),
              std::string::npos)
        << error.what();
  }
}

TEST(YoloDataYaml, ReadsValPathAndNamesInEachForm) {
  const YoloDataYaml mapping = parse_yolo_data_yaml(
      "# comment\npath: ../sets/fashion  # root\ntrain: images/train\nval: 'images/val'\nnc: 3\nnames:\n"
      "  0: T-shirt/top\n  2: \"Bag # not a comment\"\n  1: Trouser\ndownload: |\n  import os\n  x: 1\n",
      "data.yaml");
  EXPECT_EQ(mapping.path, "../sets/fashion");
  EXPECT_EQ(mapping.val, "images/val");
  EXPECT_EQ(mapping.names, (std::vector<std::string>{"T-shirt/top", "Trouser", "Bag # not a comment"}));
  EXPECT_EQ(parse_yolo_data_yaml("names:\n  - a\n  - 'b c'\n", "d").names,
            (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(parse_yolo_data_yaml("val: v\nnames: [a, 'b, c', d]\n", "d").names,
            (std::vector<std::string>{"a", "b, c", "d"}));
}

TEST(YoloDataYaml, ErrorsNameTheFileAndLine) {
  EXPECT_NE(yaml_error("val: images\n").find("data.yaml: no class names"), std::string::npos);
  EXPECT_NE(yaml_error("nc: 3\nnames: [a, b]\n").find("data.yaml: nc is 3 but names lists 2 classes"),
            std::string::npos);
  EXPECT_NE(yaml_error("names:\n  0: a\n  0: b\n").find("data.yaml:3: class id 0 is named twice"),
            std::string::npos);
  EXPECT_NE(yaml_error("names:\n  0: a\n  2: b\n").find("ids must run 0 to 1, but 1 is missing"),
            std::string::npos);
  EXPECT_NE(yaml_error("names:\n  zero: a\n").find("data.yaml:2: names: expected \"ID: NAME\""),
            std::string::npos);
  EXPECT_NE(yaml_error("names: [a, b\n").find("data.yaml:1: names: a flow list must end in ']'"),
            std::string::npos);
  EXPECT_NE(yaml_error("just text\n").find("data.yaml:1: expected \"KEY: VALUE\""), std::string::npos);
}

TEST(YoloLayout, FindsTheImagesAndLabelsOfEachLayout) {
  ScratchDir dir;
  const auto root = dir.file("set");
  testing::write_text(root / "images" / "val" / "a.jpg", "");
  testing::write_text(root / "labels" / "val" / "a.txt", "");
  testing::write_text(root / "data.yaml", "val: images/val\nnames: [a, b]\n");
  const auto from_yaml = find_yolo_layout(root.string());
  ASSERT_TRUE(from_yaml.has_value());
  EXPECT_EQ(from_yaml->images, root / "images" / "val");
  EXPECT_EQ(from_yaml->labels, std::filesystem::absolute(root / "labels" / "val"));
  EXPECT_EQ(from_yaml->names.size(), 2u);

  // The images folder alone takes the names of the data.yaml whose val it is, never none (which would
  // label the set's classes with the model's names).
  const auto from_images = find_yolo_layout((root / "images" / "val").string());
  ASSERT_TRUE(from_images.has_value());
  EXPECT_EQ(from_images->names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(from_images->data_yaml, root / "data.yaml");
  std::filesystem::remove(root / "data.yaml");
  const auto from_root = find_yolo_layout(root.string());
  ASSERT_TRUE(from_root.has_value());
  EXPECT_EQ(from_root->images, root / "images" / "val");

  EXPECT_EQ(find_yolo_layout(testing::kPhotos.string()), std::nullopt);
  EXPECT_EQ(find_yolo_layout(dir.file("no such folder").string()), std::nullopt);
}

TEST(YoloLayout, AMissingPartIsAnError) {
  ScratchDir dir;
  const auto root = dir.file("set");
  testing::write_text(root / "images" / "val" / "a.jpg", "");
  try {
    find_yolo_layout(root.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("labels/val: no labels folder for the images in"),
              std::string::npos)
        << error.what();
  }
  testing::write_text(root / "data.yaml", "val: images/test\nnames: [a]\n");
  try {
    find_yolo_layout(root.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("images/test: no images folder"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kiln
