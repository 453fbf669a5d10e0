// write_file_atomically: complete files appear, failed or interrupted writes leave the old file and no
// temp file.
#include "io/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "io/temp_files.h"
#include "safetensors_test_util.h"

namespace kiln {
namespace {

using test::fails_with;

class AtomicFile : public ::testing::Test {
 protected:
  std::filesystem::path path() const { return dir_ / "out.bin"; }
  test::TempDir dir_;
};

TEST_F(AtomicFile, WritesContent) {
  write_file_atomically(path(), [](std::ostream& out) { out << "hello"; });
  EXPECT_EQ(test::read_bytes(path()), "hello");
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.bin"});
}

TEST_F(AtomicFile, WritesLargeAndBinaryContent) {
  std::string content(3 << 20, '\0');
  for (std::size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 131 % 251);
  write_file_atomically(path(), [&](std::ostream& out) {
    out.write(content.data(), 100);  // small writes go through the buffer,
    out.write(content.data() + 100, static_cast<std::streamsize>(content.size() - 100));  // big ones past it
  });
  EXPECT_EQ(test::read_bytes(path()), content);
}

TEST_F(AtomicFile, ReplacesExistingFile) {
  test::write_bytes(path(), "old content that is longer");
  write_file_atomically(path(), [](std::ostream& out) { out << "new"; });
  EXPECT_EQ(test::read_bytes(path()), "new");
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.bin"});
}

TEST_F(AtomicFile, WriterExceptionKeepsExistingFile) {
  test::write_bytes(path(), "old");
  EXPECT_THROW(write_file_atomically(path(),
                                     [](std::ostream& out) {
                                       out << std::string(1 << 17, 'x');  // some of it reaches the temp file
                                       throw std::runtime_error("writer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(test::read_bytes(path()), "old");
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.bin"});
}

TEST_F(AtomicFile, WriterExceptionCreatesNothing) {
  EXPECT_THROW(write_file_atomically(path(), [](std::ostream&) { fail("writer failed"); }), Error);
  EXPECT_TRUE(dir_.list().empty());
}

TEST_F(AtomicFile, StreamFailureIsAnError) {
  test::write_bytes(path(), "old");
  EXPECT_TRUE(fails_with(
      [&] { write_file_atomically(path(), [](std::ostream& out) { out.setstate(std::ios::badbit); }); },
      {"out.bin", "write failed"}));
  EXPECT_EQ(test::read_bytes(path()), "old");
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.bin"});
}

TEST_F(AtomicFile, MissingFolderIsNamed) {
  EXPECT_TRUE(fails_with([&] { write_file_atomically(dir_ / "absent" / "out.bin", [](std::ostream&) {}); },
                         {"out.bin", "folder", "absent", "does not exist"}));
}

TEST_F(AtomicFile, ParentThatIsAFileIsNamed) {
  test::write_bytes(dir_ / "plain", "x");
  EXPECT_TRUE(fails_with([&] { write_file_atomically(dir_ / "plain" / "out.bin", [](std::ostream&) {}); },
                         {"plain", "is not a folder"}));
}

TEST_F(AtomicFile, DestinationThatIsAFolderIsAnError) {
  std::filesystem::create_directory(path());
  EXPECT_TRUE(fails_with([&] { write_file_atomically(path(), [](std::ostream& out) { out << "x"; }); },
                         {"out.bin", "cannot rename"}));
  EXPECT_TRUE(std::filesystem::is_directory(path()));
  EXPECT_EQ(dir_.list(), std::set<std::string>{"out.bin"});
}

TEST_F(AtomicFile, UnwritableFolderIsNamed) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  const auto folder = dir_ / "locked";
  std::filesystem::create_directory(folder);
  ::chmod(folder.c_str(), 0555);
  EXPECT_TRUE(fails_with([&] { write_file_atomically(folder / "out.bin", [](std::ostream&) {}); },
                         {"out.bin", "cannot create a temporary file", "locked"}));
  ::chmod(folder.c_str(), 0755);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// Ctrl-C while a file is being written: the program's handler (installed by the kiln program's main)
// removes the temp file, and the process still ends by the signal, as a shell expects.
TEST(AtomicFileInterrupt, AnInterruptLeavesNoTempFile) {
  test::TempDir dir;
  const std::filesystem::path out = dir / "out.bin";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    remove_temp_files_on_interrupt();
    write_file_atomically(out, [](std::ostream& stream) {
      stream << "half of it";
      stream.flush();
      ::raise(SIGINT);
    });
    ::_exit(0);  // not reached: SIGINT ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << "status " << status;
  EXPECT_TRUE(dir.list().empty()) << dir.list().size() << " file(s) left in the folder";
}

}  // namespace
}  // namespace kiln
