// Writing uncompressed POSIX ustar archives (webdataset shards) to a stream. Headers carry fixed
// fields (mode 0644, owner 0, time 0), so the same members give the same bytes on every run.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>
#include <string>

namespace kiln {

class TarWriter {
 public:
  // `name` stands for the archive in error messages.
  TarWriter(std::ostream& out, std::string name);

  // A regular file. Fails on a member name that is empty, over 100 bytes, or not plain ASCII.
  void add(const std::string& member, std::span<const std::uint8_t> data);
  // The two zero blocks that end an archive; call once, after the last member.
  void finish();

 private:
  std::ostream& out_;
  std::string name_;
};

}  // namespace kiln
