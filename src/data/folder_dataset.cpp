#include "data/folder_dataset.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/error.h"
#include "data/labels_file.h"

namespace kiln {

namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name.front() == '.';
}

bool is_image_file(const fs::directory_entry& entry) {
  std::error_code ec;
  const std::string extension = entry.path().extension().string();
  return !hidden(entry.path()) && extension.size() > 1 && is_image_extension(extension.substr(1)) &&
         entry.is_regular_file(ec);
}

struct Listing {
  std::vector<fs::path> images;
  std::vector<fs::path> folders;
};

// DIR's images and sub-folders, each sorted. Symbolic links are followed.
Listing list_folder(const fs::path& dir) {
  Listing listing;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) fail(dir.string(), ": cannot list the folder (", ec.message(), ")");
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (is_image_file(*it)) {
      listing.images.push_back(it->path());
    } else if (!hidden(it->path()) && it->is_directory(ec)) {
      listing.folders.push_back(it->path());
    }
  }
  if (ec) fail(dir.string(), ": cannot list the folder (", ec.message(), ")");
  std::sort(listing.images.begin(), listing.images.end());
  std::sort(listing.folders.begin(), listing.folders.end());
  return listing;
}

Dataset open_class_folders(const fs::path& dir, const std::vector<fs::path>& folders) {
  std::optional<std::map<std::string, std::int64_t>> mapping;
  std::optional<fs::path> labels_path = find_labels_file(dir);
  if (labels_path) mapping = read_labels_file(*labels_path);
  std::vector<Sample> samples;
  for (std::size_t index = 0; index < folders.size(); ++index) {
    const std::string folder = folders[index].filename().string();
    auto label = static_cast<std::int64_t>(index);
    if (mapping) {
      const auto it = mapping->find(folder);
      if (it == mapping->end()) {
        fail(labels_path->string(), ": does not list the class folder \"", folder, "\"");
      }
      label = it->second;
    }
    for (auto& image : find_image_files(folders[index])) {
      samples.push_back({image.string(), label, image, 0, std::nullopt, nullptr});
    }
  }
  if (samples.empty()) fail(dir.string(), ": no images (.jpg, .jpeg, .png, .webp) in its class folders");
  return Dataset(DatasetKind::kClassFolders, dir.string(), std::move(samples));
}

Dataset open_flat_folder(const fs::path& dir, const std::vector<fs::path>& images) {
  std::vector<Sample> samples;
  const std::optional<fs::path> labels_path = find_labels_file(dir);
  if (!labels_path) {
    for (const auto& image : images) samples.push_back({image.string(), kNoLabel, image, 0, std::nullopt, nullptr});
    return Dataset(DatasetKind::kFolder, dir.string(), std::move(samples));
  }
  const auto labels = read_labels_file(*labels_path);
  for (const auto& image : images) {
    const auto it = labels.find(image.filename().string());
    if (it == labels.end()) fail(image.string(), ": not listed in ", labels_path->string());
    samples.push_back({image.string(), it->second, image, 0, std::nullopt, nullptr});
  }
  return Dataset(DatasetKind::kLabelledFolder, dir.string(), std::move(samples));
}

}  // namespace

// Hidden folders are not entered; linked folders are not followed (a link loop cannot recurse
// forever), but DIR itself may be a link.
std::vector<fs::path> find_image_files(const fs::path& dir) {
  std::vector<fs::path> images;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, ec);
  if (ec) fail(dir.string(), ": cannot list the folder (", ec.message(), ")");
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (hidden(it->path())) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (is_image_file(*it)) images.push_back(it->path());
  }
  if (ec) fail(dir.string(), ": cannot list the folder (", ec.message(), ")");
  std::sort(images.begin(), images.end());
  return images;
}

Dataset open_folder_dataset(const fs::path& dir) {
  const Listing listing = list_folder(dir);
  if (listing.images.empty()) {
    if (listing.folders.empty()) fail(dir.string(), ": no images (.jpg, .jpeg, .png, .webp) found");
    return open_class_folders(dir, listing.folders);
  }
  // Images beside class folders leave it unclear which layout is meant.
  for (const auto& folder : listing.folders) {
    if (!find_image_files(folder).empty()) {
      fail(dir.string(), ": holds images both directly and in sub-folders (", folder.filename().string(),
           "); expected a flat folder or one folder per class");
    }
  }
  return open_flat_folder(dir, listing.images);
}

}  // namespace kiln
