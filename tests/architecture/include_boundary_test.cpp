// The ownership boundaries between shared code, the application layer and the model families.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "include_boundaries.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

TEST(IncludeBoundaries, SourceTreeKeepsThem) {
  const IncludeScan scan = scan_include_boundaries(KILN_SOURCE_DIR);
  EXPECT_GT(scan.files_scanned, 10) << "scanned too few files under " << KILN_SOURCE_DIR;
  for (const auto& violation : scan.violations) {
    ADD_FAILURE() << violation.file << ":" << violation.line << ": " << violation.include_line << "  -- "
                  << violation.reason;
  }
}

TEST(IncludeBoundaries, SharedCodeIncludesNoFamily) {
  EXPECT_TRUE(include_violation("src/runtime/x.cpp", "families/registry.h"));
  EXPECT_TRUE(include_violation("src/graph/x.h", "families/common/layer_builder.h"));
  EXPECT_FALSE(include_violation("src/runtime/x.cpp", "graph/graph.h"));
}

TEST(IncludeBoundaries, ApplicationLayerIncludesTheRegistryOnly) {
  EXPECT_FALSE(include_violation("src/cli/cmd_validate.cpp", "families/registry.h"));
  EXPECT_TRUE(include_violation("src/cli/cmd_run.cpp", "families/timm_resnet/builder.h"));
  EXPECT_TRUE(include_violation("src/cli/cmd_run.cpp", "families/common/layer_builder.h"));
}

TEST(IncludeBoundaries, FamiliesIncludeThemselvesAndCommonOnly) {
  EXPECT_FALSE(
      include_violation("families/timm_resnet/builder.cpp", "families/common/resnet_skeleton.h"));
  EXPECT_FALSE(include_violation("families/timm_resnet/builder.cpp", "families/common/layer_builder.h"));
  EXPECT_FALSE(include_violation("families/timm_resnet/builder.cpp", "src/graph/graph.h"));
  EXPECT_FALSE(
      include_violation("families/timm_resnest/builder.cpp", "families/common/resnet_skeleton.h"));
  EXPECT_TRUE(include_violation("families/timm_resnest/builder.cpp", "families/timm_resnet/builder.h"));
  EXPECT_TRUE(include_violation("families/timm_resnest/builder.cpp", "families/registry.h"));
  EXPECT_TRUE(include_violation("families/common/layer_builder.cpp", "families/timm_resnet/builder.h"));
  EXPECT_FALSE(include_violation("families/common/layer_builder.cpp", "families/common/checkpoint_reader.h"));
}

TEST(IncludeBoundaries, RegistryAndTestsMayIncludeAnyFamily) {
  EXPECT_FALSE(include_violation("families/registry.cpp", "families/timm_resnest/builder.h"));
  EXPECT_FALSE(include_violation("tests/families/timm_resnet_test.cpp", "families/timm_resnet/builder.h"));
}

// A throwaway tree with one bad include of each kind, spelled the ways code spells them.
class IncludeScanOfATree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_include_scan_" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }

  fs::path root_;
};

TEST_F(IncludeScanOfATree, ReportsFileLineAndIncludeOfEachViolation) {
  write("families/registry.h", "#pragma once\n");
  write("families/registry.cpp", "#include \"families/registry.h\"\n#include \"families/a/builder.h\"\n");
  write("families/common/util.h", "#pragma once\n");
  write("families/a/builder.h", "#pragma once\n#include \"families/common/util.h\"\n");
  write("families/b/builder.cpp", "// b\n#include \"../a/builder.h\"\n");
  write("families/b/other.cpp", "#include <families/registry.h>\n");
  write("src/cli/main.cpp", "#include \"families/registry.h\"\n#include \"families/a/builder.h\"\n");
  write("src/core/x.cpp", "#include <vector>\n  #  include \"families/common/util.h\"\n");
  write("tests/a_test.cpp", "#include \"families/a/builder.h\"\n");

  const IncludeScan scan = scan_include_boundaries(root_);
  EXPECT_EQ(scan.files_scanned, 8);
  ASSERT_EQ(scan.violations.size(), 4u);
  EXPECT_EQ(scan.violations[0].file, "src/cli/main.cpp");
  EXPECT_EQ(scan.violations[0].line, 2);
  EXPECT_EQ(scan.violations[0].include_line, "#include \"families/a/builder.h\"");
  EXPECT_EQ(scan.violations[1].file, "src/core/x.cpp");
  EXPECT_EQ(scan.violations[1].line, 2);
  EXPECT_EQ(scan.violations[2].file, "families/b/builder.cpp");
  EXPECT_EQ(scan.violations[2].line, 2);
  EXPECT_EQ(scan.violations[2].reason,
            "families/b must not include families/a (share code through families/common)");
  EXPECT_EQ(scan.violations[3].file, "families/b/other.cpp");
}

}  // namespace
}  // namespace kiln::testing
