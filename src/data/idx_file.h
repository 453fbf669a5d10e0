// IDX files, the format of MNIST and Fashion-MNIST: a big-endian header (magic 00 00 TYPE NDIMS, then
// NDIMS uint32 sizes) and the data, row-major. kiln reads uint8 data (TYPE 08): images [N, rows, cols]
// (magic 0x00000803) and labels [N] (0x00000801), raw or gzip-compressed (told from the bytes).
//
// The header's sizes are never trusted: a claim larger than the file can hold (for gzip, its size times
// deflate's best ratio) or than kMaxIdxBytes fails before anything is allocated, the data is read in
// blocks as it arrives, and a file that ends early or holds more than its header says fails naming
// the file and both figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <vector>

namespace kiln {

// The most data an IDX file may claim: far above MNIST's 47 MB, low enough to stop a corrupt header.
inline constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{8} << 30;
inline constexpr std::size_t kAllItems = std::numeric_limits<std::size_t>::max();

struct IdxImages {
  std::size_t count = 0;  // images in the file, as its header says (and its data holds)
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::uint8_t> pixels;  // the first kept() images, rows * cols bytes each, row-major

  std::size_t kept() const { return rows * cols == 0 ? 0 : pixels.size() / (rows * cols); }
};

struct IdxLabels {
  std::size_t count = 0;             // labels in the file
  std::vector<std::uint8_t> labels;  // the first ones kept
};

// The file is read (and checked) to its end; only the first `keep` items are kept in memory.
IdxImages read_idx_images(const std::filesystem::path& path, std::size_t keep = kAllItems);
IdxLabels read_idx_labels(const std::filesystem::path& path, std::size_t keep = kAllItems);

// Fails naming both files unless they hold as many labels as images.
void check_idx_pair(const IdxImages& images, const std::filesystem::path& images_path,
                    const IdxLabels& labels, const std::filesystem::path& labels_path);

}  // namespace kiln
