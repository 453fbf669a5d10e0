#include "core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace kiln {

namespace {

// What a path is when it is not a regular file, as a user would name it.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

void require_regular(const struct stat& info, const std::string& name) {
  if (!S_ISREG(info.st_mode)) fail(name, ": is ", kind_of(info.st_mode), ", not a regular file");
}

}  // namespace

RegularFile RegularFile::open(const std::filesystem::path& path, const std::string& name) {
  std::string shown = name.empty() ? path.string() : name;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. Reads from a regular
  // file ignore the flag.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int code = errno;
    fail(shown, ": cannot open: ", std::strerror(code));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int code = errno;
    ::close(fd);
    fail(shown, ": cannot stat: ", std::strerror(code));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    require_regular(info, shown);
  }
  return RegularFile(fd, static_cast<std::uint64_t>(info.st_size), std::move(shown));
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), name_(std::move(other.name_)) {}

RegularFile& RegularFile::operator=(RegularFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    name_ = std::move(other.name_);
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t RegularFile::read_at(std::uint64_t offset, void* out, std::size_t count) const {
  auto* bytes = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd_, bytes + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int code = errno;
      fail(name_, ": read error: ", std::strerror(code));
    }
    if (got == 0) break;  // the end of the file
    done += static_cast<std::size_t>(got);
  }
  return done;
}

void RegularFile::require_at_most(std::uint64_t max_bytes, std::string_view what) const {
  require(size_ <= max_bytes, name_, ": ", size_, " bytes, more than ", what, " can need (at most ",
          max_bytes, ")");
}

void require_regular_file(const std::filesystem::path& path, const std::string& name) {
  const std::string shown = name.empty() ? path.string() : name;
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int code = errno;
    fail(shown, ": cannot open: ", std::strerror(code));  // worded as RegularFile::open words it
  }
  require_regular(info, shown);
}

std::string read_regular_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                              std::string_view what, const std::string& name) {
  const RegularFile file = RegularFile::open(path, name);
  file.require_at_most(max_bytes, what);
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  const std::size_t got = file.read_at(0, text.data(), text.size());
  // A file that shrank while being read is read as it now is.
  text.resize(got);
  return text;
}

}  // namespace kiln
