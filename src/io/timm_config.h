// timm's config.json (as the Hub ships it, with the eval settings under "pretrained_cfg") and the
// preprocessing settings kiln needs from it.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

enum class Interpolation { kBilinear, kBicubic, kNearest };

struct PreprocessConfig {
  std::int64_t input_size = 224;  // square side of the network input (input_size[1] == [2] required)
  Interpolation interpolation = Interpolation::kBilinear;
  double crop_pct = 0.875;
  std::string crop_mode = "center";  // only "center" is supported
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

struct ModelConfig {
  std::string architecture;  // e.g. "resnest50d"
  std::int64_t num_classes = 1000;
  std::vector<std::string> label_names;  // empty when the config has none
  PreprocessConfig preprocess;
};

// The most classes a config.json may declare: beyond any classifier timm ships (ImageNet-22k has
// 21843), and small enough that the class-name table a file asks for stays a few megabytes.
constexpr std::int64_t kMaxTimmClasses = std::int64_t{1} << 20;

// Reads config.json; keys absent from the file keep the values of `defaults`. Fails with
// "<path>: key '<key>': expected ..." on a wrong type or value.
ModelConfig read_timm_config(const std::filesystem::path& path, const ModelConfig& defaults);

}  // namespace kiln
