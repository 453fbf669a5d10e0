// Telling plan files from other files by their first bytes, as kiln inspect and kiln eval do.
#include "plan/plan_magic.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "core/error.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"

namespace kiln {
namespace {

using plan_test::TempDir;

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span(text.data(), text.size()));
}

TEST(PlanMagic, APlanFileLooksLikeAPlan) {
  TempDir dir;
  write_plan(dir / "model.kplan", plan_test::every_op_plan());
  EXPECT_TRUE(looks_like_plan(dir / "model.kplan"));
}

TEST(PlanMagic, OtherFilesDoNot) {
  TempDir dir;
  write_text(dir / "model.safetensors", std::string("\x08\0\0\0\0\0\0\0{}      ", 16));
  write_text(dir / "short", "KILNPLA");
  write_text(dir / "empty", "");
  write_text(dir / "near", "KILNPLAX and more");
  EXPECT_FALSE(looks_like_plan(dir / "model.safetensors"));
  EXPECT_FALSE(looks_like_plan(dir / "short"));
  EXPECT_FALSE(looks_like_plan(dir / "empty"));
  EXPECT_FALSE(looks_like_plan(dir / "near"));
  EXPECT_FALSE(looks_like_plan(dir / "missing"));
}

// The reader checks a file's head the same way, so a truncated plan is called truncated, not foreign.
TEST(PlanMagic, AHeadShorterThanTheMagicAgreesWhenItIsAPrefix) {
  EXPECT_TRUE(agrees_with_plan_magic(bytes_of("KILN")));
  EXPECT_TRUE(agrees_with_plan_magic(bytes_of("KILNPLAN\x01")));
  EXPECT_TRUE(agrees_with_plan_magic(bytes_of("")));
  EXPECT_FALSE(agrees_with_plan_magic(bytes_of("KILX")));
  EXPECT_FALSE(agrees_with_plan_magic(bytes_of("PLANKILN")));
}

// A file of another kind is named by what it is.
TEST(PlanMagic, ReaderNamesAFileOfAnotherKind) {
  const std::filesystem::path seeds = std::filesystem::path(KILN_TEST_DATA_DIR) / "../fuzz/corpus";
  for (const auto& [file, kind] : {std::pair{"jpeg/baseline.jpg", "a JPEG image"},
                                   std::pair{"safetensors/small.safetensors", "a safetensors checkpoint"},
                                   std::pair{"webdataset/ustar.tar", "a tar archive"}}) {
    const auto path = seeds / file;
    try {
      read_plan(path);
      ADD_FAILURE() << file << " read as a plan";
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()), path.string() + ": this is " + kind + ", not a kiln plan");
    }
  }
}

}  // namespace
}  // namespace kiln
