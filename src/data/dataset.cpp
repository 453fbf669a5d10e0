#include "data/dataset.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/error.h"
#include "data/file_bytes.h"

namespace kiln {

std::string_view dataset_kind_name(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::kClassFolders:
      return "class-folders";
    case DatasetKind::kLabelledFolder:
      return "labelled-folder";
    case DatasetKind::kFolder:
      return "folder";
    case DatasetKind::kWebDataset:
      return "webdataset";
  }
  return "unknown";
}

bool is_image_extension(std::string_view extension) {
  std::string lower(extension);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "jpg" || lower == "jpeg" || lower == "png" || lower == "webp";
}

Dataset::Dataset(DatasetKind kind, std::string source, std::vector<Sample> samples,
                 std::vector<std::filesystem::path> shards)
    : kind_(kind), source_(std::move(source)), samples_(std::move(samples)), shards_(std::move(shards)) {
  require(!samples_.empty(), source_, ": no images (.jpg, .jpeg, .png, .webp) found");
  labelled_ = samples_.front().label != kNoLabel;
  for (const Sample& sample : samples_) {
    // A dataset is labelled throughout or not at all: accuracy over a partly labelled set would
    // silently count a different set of images.
    if ((sample.label != kNoLabel) != labelled_) {
      const Sample& unlabelled = labelled_ ? sample : samples_.front();
      const Sample& labelled = labelled_ ? samples_.front() : sample;
      fail(unlabelled.name, ": has no label, but ", labelled.name, " has one (label every image or none)");
    }
  }
}

const Sample& Dataset::sample(std::size_t index) const {
  if (index >= samples_.size()) {
    fail(source_, ": sample index ", index, " out of range (the dataset has ", samples_.size(), " images)");
  }
  return samples_[index];
}

std::size_t Dataset::classes_seen() const {
  if (!labelled_) return 0;
  std::set<std::int64_t> labels;
  for (const Sample& sample : samples_) labels.insert(sample.label);
  return labels.size();
}

void Dataset::check_labels(std::int64_t num_classes) const {
  require(num_classes > 0, source_, ": number of classes must be positive, got ", num_classes);
  for (const Sample& sample : samples_) {
    if (sample.label == kNoLabel) continue;
    if (sample.label < 0 || sample.label >= num_classes) {
      fail(sample.name, ": label ", sample.label, " is out of range, expected 0 to ", num_classes - 1, " (",
           num_classes, " classes)");
    }
  }
}

std::vector<std::uint8_t> Dataset::read_bytes(std::size_t index) const {
  const Sample& s = sample(index);
  if (s.archive) {
    const auto begin = s.archive->begin() + static_cast<std::ptrdiff_t>(s.offset);
    return {begin, begin + static_cast<std::ptrdiff_t>(s.size.value_or(0))};
  }
  return read_file_bytes(s.file, s.offset, s.size, s.name);
}

Image Dataset::load(std::size_t index) const {
  return decode_image_bytes(read_bytes(index), sample(index).name);
}

}  // namespace kiln
