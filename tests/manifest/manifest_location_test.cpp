// How manifest arguments resolve, and which manifests `kiln validate` checks by default.
#include "manifest/manifest_location.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// A families directory in a fresh temporary folder: alpha/ and beta/ have manifests, common/ has none.
class ManifestLocation : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() / ("kiln_manifest_" + std::to_string(getpid()) + "_" + test->name());
    fs::remove_all(root_);
    families_ = root_ / "families";
    for (const char* family : {"beta", "alpha"}) {
      fs::create_directories(families_ / family);
      std::ofstream(families_ / family / "manifest.toml") << "# " << family << "\n";
    }
    fs::create_directories(families_ / "common");
    std::ofstream(families_ / "common" / "layer_builder.h") << "// shared\n";
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  fs::path families_;
};

std::string error_of(std::string_view argument, const fs::path& families_dir) {
  try {
    resolve_manifest_path(argument, families_dir);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error for " << argument;
  return "";
}

TEST_F(ManifestLocation, DirectoryMeansItsManifest) {
  EXPECT_EQ(resolve_manifest_path((families_ / "alpha").string(), "unused"),
            families_ / "alpha" / "manifest.toml");
}

TEST_F(ManifestLocation, FileIsUsedAsItIs) {
  const fs::path file = families_ / "beta" / "manifest.toml";
  EXPECT_EQ(resolve_manifest_path(file.string(), "unused"), file);
}

TEST_F(ManifestLocation, BareNameIsLookedUpInTheFamiliesDirectory) {
  EXPECT_EQ(resolve_manifest_path("alpha", families_), families_ / "alpha" / "manifest.toml");
}

TEST_F(ManifestLocation, UnknownBareName) {
  const std::string message = error_of("gamma", families_);
  EXPECT_EQ(message.rfind("gamma: ", 0), 0u) << message;
  EXPECT_NE(message.find((families_ / "gamma" / "manifest.toml").string()), std::string::npos) << message;
}

TEST_F(ManifestLocation, DirectoryWithoutManifest) {
  const std::string argument = (families_ / "common").string();
  EXPECT_EQ(error_of(argument, families_), argument + ": directory has no manifest.toml");
}

TEST_F(ManifestLocation, MissingPath) {
  const std::string argument = (root_ / "nowhere.toml").string();
  EXPECT_EQ(error_of(argument, families_), argument + ": no such file or directory");
}

TEST_F(ManifestLocation, FindsEveryFamilyManifestSorted) {
  const std::vector<fs::path> expected = {families_ / "alpha" / "manifest.toml",
                                          families_ / "beta" / "manifest.toml"};
  EXPECT_EQ(find_family_manifests(families_), expected);
}

TEST_F(ManifestLocation, NoFamiliesDirectory) {
  EXPECT_THROW(find_family_manifests(root_ / "nowhere"), Error);
}

TEST(ShippedFamilies, BothTimmManifestsAreFound) {
  const fs::path families = fs::path(KILN_SOURCE_DIR) / "families";
  const std::vector<fs::path> found = find_family_manifests(families);
  EXPECT_NE(std::find(found.begin(), found.end(), families / "timm_resnest" / "manifest.toml"), found.end());
  EXPECT_NE(std::find(found.begin(), found.end(), families / "timm_resnet" / "manifest.toml"), found.end());
}

}  // namespace
}  // namespace kiln
