// Turning an IDX pair (images and labels, idx_file.h) into a dataset kiln's readers open
// (open_dataset.h), labelled as the IDX labels say:
//
// - webdataset: OUT/PREFIX-000000.tar, ... each holding SHARD_SIZE samples KEY.png + KEY.cls;
// - folder: OUT/CLASS/KEY.png, one folder per class.
//
// KEY is the image's index in the IDX file, zero-padded (000000). Images are grey 8-bit PNGs, which
// kiln's decoder opens as RGB with the grey value in each channel, as PIL's convert("RGB") does.
// OUT/labels.txt names the classes (class_names.h); in the folder layout it also maps each folder to
// its index.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "data/idx_file.h"

namespace kiln {

enum class IdxImportFormat { kWebDataset, kFolder };

inline constexpr std::size_t kDefaultShardSize = 10000;

struct IdxImportRequest {
  std::filesystem::path images;
  std::filesystem::path labels;
  std::optional<std::filesystem::path> names;  // a labels file naming the classes; else "0", "1", ...
  std::size_t first = kAllItems;               // import only the first N images
  std::filesystem::path out;
  IdxImportFormat format = IdxImportFormat::kWebDataset;
  std::size_t shard_size = kDefaultShardSize;
  std::string prefix = "shard";
  bool force = false;     // write into a non-empty OUT (check_dataset_folder)
  bool progress = false;  // a progress line on stderr (core/progress.h)
};

struct IdxImportResult {
  std::size_t images = 0;          // imported
  std::size_t images_in_file = 0;  // in the IDX file
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::string> class_names;
  std::vector<std::size_t> class_counts;      // imported images per class
  std::vector<std::filesystem::path> shards;  // webdataset only
  std::filesystem::path labels_file;
};

// Checks OUT and the inputs, reads both IDX files whole, then writes the dataset (each file written
// to a temp file and renamed). Fails with one line naming the file or option at fault.
IdxImportResult import_idx(const IdxImportRequest& request);

}  // namespace kiln
