// A dataset: an ordered list of images, each with an optional class label, read on demand. Sources
// (see open_dataset.h) build it from a folder of images or from webdataset tar shards; the order is
// deterministic so that a fixed-stride sample picks the same images on every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/image.h"

namespace kiln {

constexpr std::int64_t kNoLabel = -1;

enum class DatasetKind {
  kClassFolders,    // DIR/CLASS/image.jpg, class index from the sorted folder names or a labels file
  kLabelledFolder,  // DIR/image.jpg with DIR/labels.txt or DIR/labels.csv
  kFolder,          // DIR/image.jpg, unlabelled (calibration)
  kWebDataset,      // tar shards of KEY.jpg / KEY.png / KEY.webp with an optional KEY.cls
};

std::string_view dataset_kind_name(DatasetKind kind);

// True for the image extensions datasets pick up: jpg, jpeg, png, webp in any case, without the dot.
// The format itself is detected from the bytes when an image is decoded.
bool is_image_extension(std::string_view extension);

struct Sample {
  std::string name;                   // the image file, or "SHARD:KEY" for a webdataset sample
  std::int64_t label = kNoLabel;      // class index, kNoLabel when unlabelled
  std::filesystem::path file;         // the file holding the encoded image
  std::uint64_t offset = 0;           // where the image starts in `file` (a tar member's data)
  std::optional<std::uint64_t> size;  // the member's size; unset for a whole file
  // A gzip-compressed shard's decompressed bytes, shared by its samples; offset and size index it.
  std::shared_ptr<const std::vector<std::uint8_t>> archive;
};

class Dataset {
 public:
  // `source` is what the user named (folder, shard or pattern); `shards` lists a webdataset's tar
  // files. Fails when there are no samples, or when some samples are labelled and others not.
  Dataset(DatasetKind kind, std::string source, std::vector<Sample> samples,
          std::vector<std::filesystem::path> shards = {});

  DatasetKind kind() const { return kind_; }
  const std::string& source() const { return source_; }
  const std::vector<std::filesystem::path>& shards() const { return shards_; }
  std::size_t size() const { return samples_.size(); }
  const Sample& sample(std::size_t index) const;
  const std::vector<Sample>& samples() const { return samples_; }
  // True when every sample has a label.
  bool labelled() const { return labelled_; }
  // The number of distinct labels (0 when unlabelled).
  std::size_t classes_seen() const;

  // Fails naming the first sample whose label is outside [0, num_classes).
  void check_labels(std::int64_t num_classes) const;

  // The encoded image; fails naming the sample when the file cannot be read.
  std::vector<std::uint8_t> read_bytes(std::size_t index) const;
  // The decoded image; fails naming the sample when it is unreadable or corrupt.
  Image load(std::size_t index) const;

 private:
  DatasetKind kind_;
  std::string source_;
  std::vector<Sample> samples_;
  std::vector<std::filesystem::path> shards_;
  bool labelled_ = false;
};

}  // namespace kiln
