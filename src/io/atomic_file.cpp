#include "io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <streambuf>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/temp_files.h"

namespace kiln {

namespace {

std::string errno_text(int code) { return std::strerror(code); }

// A std::streambuf over a POSIX file descriptor, so that the bytes the writer produced can be
// fsync'ed through the same descriptor and a failed write(2) reports its errno.
class FdStreamBuf final : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd), buffer_(kBufferSize) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  FdStreamBuf(const FdStreamBuf&) = delete;
  FdStreamBuf& operator=(const FdStreamBuf&) = delete;

  // errno of the first failed write, 0 if none.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!flush_buffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  std::streamsize xsputn(const char* data, std::streamsize count) override {
    // Large blocks (tensor data) bypass the buffer.
    if (count >= static_cast<std::streamsize>(buffer_.size())) {
      if (!flush_buffer() || !write_all(data, static_cast<std::size_t>(count))) return 0;
      return count;
    }
    return std::streambuf::xsputn(data, count);
  }

  int sync() override { return flush_buffer() ? 0 : -1; }

 private:
  static constexpr std::size_t kBufferSize = 1 << 16;

  bool flush_buffer() {
    const auto pending = static_cast<std::size_t>(pptr() - pbase());
    const bool ok = write_all(pbase(), pending);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }

  bool write_all(const char* data, std::size_t count) {
    if (error_ != 0) return false;
    while (count > 0) {
      const ssize_t written = ::write(fd_, data, count);
      if (written < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      data += written;
      count -= static_cast<std::size_t>(written);
    }
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

// Creates a new file with a name no other writer uses (O_EXCL), beside the destination.
int create_temp_file(const std::filesystem::path& path, std::filesystem::path& temp_path) {
  static std::atomic<unsigned> counter{0};
  std::random_device entropy;
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path =
        folder / cat(".", path.filename().string(), ".tmp-", ::getpid(), "-", counter++, "-", entropy());
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    const int code = errno;  // read before anything else can change it
    if (code != EEXIST) {
      fail(path.string(), ": cannot create a temporary file in folder '", folder.string(),
           "': ", errno_text(code));
    }
  }
  fail(path.string(), ": cannot find an unused temporary file name in folder '", folder.string(), "'");
}

void check_folder(const std::filesystem::path& path) {
  require(!path.empty(), "write_file_atomically: empty path");
  require(path.has_filename(), path.string(), ": expected a file path, not a folder");
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code error;
  const auto status = std::filesystem::status(folder, error);
  require(std::filesystem::exists(status), path.string(), ": folder '", folder.string(), "' does not exist");
  require(std::filesystem::is_directory(status), path.string(), ": '", folder.string(), "' is not a folder");
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write) {
  check_folder(path);
  std::filesystem::path temp_path;
  int fd = create_temp_file(path, temp_path);
  const TempFileGuard interrupt_guard(temp_path);  // removed by the program's SIGINT/SIGTERM handler
  try {
    FdStreamBuf buffer(fd);
    std::ostream out(&buffer);
    write(out);
    out.flush();
    if (buffer.error() != 0) fail(path.string(), ": write failed: ", errno_text(buffer.error()));
    require(static_cast<bool>(out), path.string(), ": write failed (the output stream reported an error)");
    // Data must be on disk before the rename makes it visible, or a crash could leave an empty file.
    if (::fsync(fd) != 0) {
      const int code = errno;
      fail(path.string(), ": fsync failed: ", errno_text(code));
    }
    const int closed = ::close(fd);
    const int close_code = errno;
    fd = -1;
    if (closed != 0) fail(path.string(), ": close failed: ", errno_text(close_code));
    if (std::rename(temp_path.c_str(), path.c_str()) != 0) {
      const int code = errno;
      fail(path.string(), ": cannot rename '", temp_path.filename().string(),
           "' into place: ", errno_text(code));
    }
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp_path.c_str());
    throw;
  }
  // Best effort: persist the rename itself. The file is already complete, so a failure here is not
  // worth reporting.
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) {
    ::fsync(folder_fd);
    ::close(folder_fd);
  }
}

}  // namespace kiln
