// kiln's resize + center crop against crops made by Pillow and torchvision themselves
// (pil_*: tools/goldens/pil_crops.py with Debian's Pillow) and by timm's own eval transform on the GPU
// machine (timm_*: tools/goldens/make_timm_goldens.py): every byte must match.
//
// Each folder tests/data/preprocess/<maker>_<interpolation>_<crop_pct>/ holds meta.json (settings,
// photo list, library versions) and one uint8 HWC .npy per photo.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/image.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kDataDir = KILN_TEST_DATA_DIR;

struct Npy {
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> data;
};

// Just enough of the .npy format for these fixtures: version 1.0, dtype |u1, C order.
Npy read_u8_npy(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic, 6), "\x93NUMPY");
  EXPECT_EQ(magic[6], 1) << path << ": only .npy version 1.0 is read here";
  unsigned char len_bytes[2] = {};
  in.read(reinterpret_cast<char*>(len_bytes), 2);
  std::string header(static_cast<std::size_t>(len_bytes[0] | (len_bytes[1] << 8)), '\0');
  in.read(header.data(), static_cast<std::streamsize>(header.size()));
  EXPECT_NE(header.find("'descr': '|u1'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  Npy npy;
  const std::string shape_key = "'shape': (";
  const auto shape_at = header.find(shape_key);
  EXPECT_NE(shape_at, std::string::npos) << header;
  if (shape_at != std::string::npos) {
    const auto begin = shape_at + shape_key.size();
    std::istringstream dims(header.substr(begin, header.find(')', begin) - begin));
    std::string dim;
    while (std::getline(dims, dim, ',')) {
      if (dim.find_first_not_of(' ') != std::string::npos) npy.shape.push_back(std::stoll(dim));
    }
  }
  std::int64_t count = 1;
  for (std::int64_t d : npy.shape) count *= d;
  npy.data.resize(static_cast<std::size_t>(count));
  in.read(reinterpret_cast<char*>(npy.data.data()), static_cast<std::streamsize>(count));
  EXPECT_EQ(in.gcount(), count) << path << ": truncated";
  return npy;
}

std::vector<fs::path> fixture_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(kDataDir / "preprocess")) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && (name.rfind("pil_", 0) == 0 || name.rfind("timm_", 0) == 0)) {
      dirs.push_back(entry.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

TEST(PreprocessPil, ResizeAndCropMatchPillowExactly) {
  const std::vector<fs::path> dirs = fixture_dirs();
  ASSERT_GE(dirs.size(), 4u) << "expected the committed fixtures under " << kDataDir / "preprocess";
  int checked = 0;
  for (const fs::path& dir : dirs) {
    std::ifstream meta_file(dir / "meta.json");
    ASSERT_TRUE(meta_file.good()) << dir / "meta.json";
    const nlohmann::json meta = nlohmann::json::parse(meta_file);
    PreprocessConfig config;
    const std::string interpolation = meta.at("interpolation");
    config.interpolation = interpolation == "bicubic"   ? Interpolation::kBicubic
                           : interpolation == "nearest" ? Interpolation::kNearest
                                                        : Interpolation::kBilinear;
    config.crop_pct = meta.at("crop_pct").get<double>();
    // pil_crops.py writes the side as a number, timm's data config as [3, H, W].
    const auto& size = meta.at("input_size");
    config.input_size = size.is_array() ? size.back().get<std::int64_t>() : size.get<std::int64_t>();
    for (const auto& photo : meta.at("photos")) {
      const fs::path photo_path = kDataDir / "photos" / photo.get<std::string>();
      SCOPED_TRACE(dir.filename().string() + " " + photo_path.filename().string());
      const Npy expected = read_u8_npy(dir / (photo_path.stem().string() + ".npy"));
      ASSERT_EQ(expected.shape, (std::vector<std::int64_t>{config.input_size, config.input_size, 3}));
      const Image actual = eval_resize_crop(decode_image(photo_path), config);
      ASSERT_EQ(actual.rgb.size(), expected.data.size());
      std::size_t differing = 0;
      int max_diff = 0;
      for (std::size_t i = 0; i < actual.rgb.size(); ++i) {
        const int diff = std::abs(int{actual.rgb[i]} - int{expected.data[i]});
        differing += diff != 0;
        max_diff = std::max(max_diff, diff);
      }
      EXPECT_EQ(differing, 0u) << "max abs diff " << max_diff;
      ++checked;
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace kiln
