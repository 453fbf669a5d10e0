// Files that are not what their name claims: a FIFO, a character device, a folder, or a file larger than
// its format can need. Each is refused at once with one line naming it, before a byte is read.
#include "core/regular_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/sha256.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class RegularFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_regular_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    fifo_ = dir_ / "pipe";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    std::ofstream(dir_ / "small.txt", std::ios::binary) << "twelve bytes";
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_, fifo_;
};

// The message `run` fails with ("" when it does not fail), and that it failed well within a second: a
// FIFO with no writer would block an open() without O_NONBLOCK forever.
template <typename Run>
std::string quick_error(Run&& run) {
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    run();
  } catch (const Error& error) {
    message = error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  return message;
}

TEST_F(RegularFileTest, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string name = fifo_.string();
  EXPECT_EQ(quick_error([&] { RegularFile::open(fifo_); }),
            name + ": is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(quick_error([&] { require_regular_file(fifo_); }),
            name + ": is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(quick_error([&] { read_regular_file(fifo_, 100, "a config.json"); }),
            name + ": is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(quick_error([&] { sha256_file_hex(fifo_); }),
            name + ": is a FIFO (named pipe), not a regular file");
}

TEST_F(RegularFileTest, ADeviceIsRefusedRatherThanReadForever) {
  EXPECT_EQ(quick_error([] { sha256_file_hex("/dev/zero"); }),
            "/dev/zero: is a character device, not a regular file");
  EXPECT_EQ(quick_error([] { read_regular_file("/dev/zero", 1 << 20, "a config.json"); }),
            "/dev/zero: is a character device, not a regular file");
}

TEST_F(RegularFileTest, AFolderOrAMissingFileIsNamed) {
  EXPECT_EQ(quick_error([&] { RegularFile::open(dir_); }),
            dir_.string() + ": is a folder, not a regular file");
  EXPECT_EQ(quick_error([&] { RegularFile::open(dir_ / "absent"); }),
            (dir_ / "absent").string() + ": cannot open: No such file or directory");
  EXPECT_EQ(quick_error([&] { RegularFile::open(fifo_, "--config"); }),
            "--config: is a FIFO (named pipe), not a regular file");
}

TEST_F(RegularFileTest, AWholeReadIsBoundedByWhatTheFormatCanNeed) {
  const fs::path small = dir_ / "small.txt";
  EXPECT_EQ(read_regular_file(small, 12, "a label file"), "twelve bytes");
  EXPECT_EQ(quick_error([&] { read_regular_file(small, 11, "a label file"); }),
            small.string() + ": 12 bytes, more than a label file can need (at most 11)");
}

TEST_F(RegularFileTest, ReadsAtAnOffsetAndStopsAtTheEnd) {
  const RegularFile file = RegularFile::open(dir_ / "small.txt");
  EXPECT_EQ(file.size(), 12u);
  std::string part(10, '\0');
  EXPECT_EQ(file.read_at(7, part.data(), part.size()), 5u);
  EXPECT_EQ(part.substr(0, 5), "bytes");
  EXPECT_EQ(sha256_file_hex(dir_ / "small.txt"),
            sha256_hex(std::as_bytes(std::span(std::string_view("twelve bytes")))));
}

}  // namespace
}  // namespace kiln
