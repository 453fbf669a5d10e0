#include "data/open_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "data/brace_pattern.h"
#include "data/folder_dataset.h"
#include "data/webdataset.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

// True when DIR holds .tar files and no images; fails when it holds both .tar files and images in
// sub-folders, where either layout could be meant.
bool is_shard_folder(const fs::path& dir) {
  std::error_code ec;
  bool tars = false;
  std::vector<fs::path> folders;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().front() == '.') continue;
    if (it->is_directory(ec)) {
      folders.push_back(it->path());
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string extension = it->path().extension().string();
    if (extension.size() > 1 && is_image_extension(extension.substr(1))) return false;
    tars = tars || is_shard_name(it->path());
  }
  if (!tars) return false;
  for (const auto& folder : folders) {
    if (!find_image_files(folder).empty()) {
      fail(dir.string(), ": holds both .tar shards and image folders (", folder.filename().string(),
           "); name the shards (a .tar file or a pattern) or a folder of images");
    }
  }
  return true;
}

}  // namespace

Dataset open_dataset(const std::string& data) {
  require(!data.empty(), "dataset: expected a folder, a .tar shard or a shard pattern, got an empty name");
  if (is_brace_pattern(data)) return open_webdataset(data, find_shards(data));
  const fs::path path(data);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    if (!is_shard_name(path)) {
      fail(data,
           ": expected a folder of images, a .tar or .tar.gz shard, a folder of shards or a shard pattern");
    }
    return open_webdataset(data, {path});
  }
  if (!fs::is_directory(path, ec)) fail(data, ": does not exist");
  if (is_shard_folder(path)) return open_webdataset(data, find_shards(data));
  return open_folder_dataset(path);
}

}  // namespace kiln
