// safetensors: read (memory-mapped, every rule of the format checked) and write.
//
// Layout: 8 bytes little-endian u64 N = header length; N bytes of UTF-8 JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {str: str}};
// then the data section. Offsets are relative to the start of the data section.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kiln {

inline constexpr std::uint64_t kSafetensorsMaxHeader = 100'000'000;  // 100 MB, as the reference implementation

class SafetensorsFile {
 public:
  // Maps the file and validates it; fails with "<path>: <what is wrong>" naming the tensor if any.
  static SafetensorsFile open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // Names in the order of their data offsets.
  const std::vector<std::string>& names() const { return names_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // A view into the mapping (kept alive by the returned tensor). Fails naming the key if absent.
  const Tensor& tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  std::size_t file_size() const { return file_size_; }

 private:
  std::filesystem::path path_;
  std::vector<std::string> names_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
  std::size_t file_size_ = 0;
};

// Writes tensors (sorted by name, 8-byte aligned header as the reference writer pads it) to a temp file
// beside `path` and renames it into place.
void write_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace kiln
