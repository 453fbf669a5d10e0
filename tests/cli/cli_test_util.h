// What the CLI tests share: test data paths, a scratch folder, and the one-line error check.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_runner.h"

namespace kiln::testing {

namespace fs = std::filesystem;

inline const fs::path kData = fs::path(KILN_TEST_DATA_DIR);
inline const fs::path kTiny = kData / "golden" / "resnest_tiny";
inline const fs::path kFamilies = kData.parent_path().parent_path() / "families";
inline const fs::path kPhotos = kData / "photos";

inline std::string bytes_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A temporary folder for one test, removed with everything in it.
class Scratch {
 public:
  Scratch() : dir_(fs::temp_directory_path() / ("kiln_cli_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  fs::path file(const std::string& name, const std::string& contents) const {
    const fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << contents;
    return path;
  }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

// A single line on stderr, starting "kiln: error:", and a non-zero exit: what every bad input gets.
inline void expect_one_line_error(const CliResult& result, const std::string& mention) {
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.rfind("kiln: error: ", 0), 0u) << result.output;
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 1) << result.output;
  EXPECT_NE(result.output.find(mention), std::string::npos)
      << "expected '" << mention << "' in: " << result.output;
}

}  // namespace kiln::testing
