// read_labels_file: "NAME,LABEL" and "NAME LABEL" lines, a header, and errors naming the line.
#include "data/labels_file.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "data_set_fixtures.h"

namespace kiln {
namespace {

using testing::ScratchDir;

std::string labels_error(const std::filesystem::path& path) {
  try {
    read_labels_file(path);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "read_labels_file(" << path << ") did not throw";
  return "";
}

TEST(LabelsFile, CommaAndSpaceSeparatedWithHeader) {
  ScratchDir dir;
  testing::write_text(dir.file("labels.csv"), "filename,label\r\na.jpg,3\r\nwith space.png , 12\n\n# note\n");
  const auto csv = read_labels_file(dir.file("labels.csv"));
  EXPECT_EQ(csv, (std::map<std::string, std::int64_t>{{"a.jpg", 3}, {"with space.png", 12}}));

  testing::write_text(dir.file("labels.txt"), "n01440764 0\nn01443537\t\t1\n");
  const auto txt = read_labels_file(dir.file("labels.txt"));
  EXPECT_EQ(txt, (std::map<std::string, std::int64_t>{{"n01440764", 0}, {"n01443537", 1}}));
}

TEST(LabelsFile, ErrorsNameTheLine) {
  ScratchDir dir;
  const auto path = dir.file("labels.txt");
  testing::write_text(path, "a.jpg 1\nb.jpg one\n");
  std::string message = labels_error(path);
  EXPECT_NE(message.find(path.string() + ":2:"), std::string::npos) << message;

  testing::write_text(path, "a.jpg 1\na.jpg 2\n");
  message = labels_error(path);
  EXPECT_NE(message.find(":2:"), std::string::npos) << message;
  EXPECT_NE(message.find("listed again"), std::string::npos) << message;

  testing::write_text(path, "a.jpg -1\n");
  EXPECT_NE(labels_error(path).find("negative"), std::string::npos);

  testing::write_text(path, "a.jpg\n");
  EXPECT_NE(labels_error(path).find(":1:"), std::string::npos);

  testing::write_text(path, "filename,label\n");
  EXPECT_NE(labels_error(path).find("no labels"), std::string::npos);
}

TEST(LabelsFile, FindsOneOfTxtAndCsv) {
  ScratchDir dir;
  EXPECT_FALSE(find_labels_file(dir.file("")).has_value());
  testing::write_text(dir.file("labels.csv"), "a,1\n");
  EXPECT_EQ(find_labels_file(dir.file("")), dir.file("labels.csv"));
  testing::write_text(dir.file("labels.txt"), "a 1\n");
  EXPECT_THROW(find_labels_file(dir.file("")), Error);
}

}  // namespace
}  // namespace kiln
