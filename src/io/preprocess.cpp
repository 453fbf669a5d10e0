// timm's eval transform for crop_mode "center" with a square input size (timm 1.0
// transforms_imagenet_eval): torchvision Resize(floor(size / crop_pct)) of the shorter side,
// CenterCrop(size), ToTensor, Normalize(mean, std), all on the PIL path.
#include <cmath>
#include <cstdint>

#include "core/error.h"
#include "io/image.h"

namespace kiln {
namespace {

// Python's round() of diff / 2: halves go to the even neighbour (torchvision's center_crop offsets).
std::int64_t half_round_even(std::int64_t diff) {
  const std::int64_t down = diff / 2;
  if (diff % 2 == 0) return down;
  return down % 2 == 0 ? down : down + 1;
}

void check_config(const PreprocessConfig& config) {
  require(config.input_size > 0, "preprocess: input_size must be positive, got ", config.input_size);
  require(config.crop_pct > 0.0 && config.crop_pct <= 1.0, "preprocess: crop_pct must be in (0, 1], got ",
          config.crop_pct);
  require(config.crop_mode == "center", "preprocess: unsupported crop_mode '", config.crop_mode,
          "' (only 'center' is supported)");
  for (int c = 0; c < 3; ++c) {
    require(config.std[c] != 0.0f, "preprocess: std[", c, "] is zero");
  }
}

}  // namespace

Image eval_resize_crop(const Image& image, const PreprocessConfig& config) {
  check_config(config);
  require(image.width > 0 && image.height > 0, "preprocess: empty image");
  const std::int64_t size = config.input_size;
  // math.floor(size / crop_pct) in double, as timm computes it.
  const auto scale_size = static_cast<std::int64_t>(std::floor(static_cast<double>(size) / config.crop_pct));

  // torchvision Resize(int): the shorter side becomes scale_size, the longer one
  // int(scale_size * long / short), truncated.
  const bool portrait = image.width <= image.height;
  const std::int64_t short_side = portrait ? image.width : image.height;
  const std::int64_t long_side = portrait ? image.height : image.width;
  const auto new_long = static_cast<std::int64_t>(static_cast<double>(scale_size * long_side) /
                                                  static_cast<double>(short_side));
  const std::int64_t new_width = portrait ? scale_size : new_long;
  const std::int64_t new_height = portrait ? new_long : scale_size;
  // crop_pct <= 1 makes both sides at least `size`, so CenterCrop never pads.
  require(new_width >= size && new_height >= size, "preprocess: resized image ", new_width, "x", new_height,
          " is smaller than the crop ", size);

  const CropWindow window{half_round_even(new_width - size), half_round_even(new_height - size), size, size};
  return resize_crop(image, new_width, new_height, config.interpolation, window);
}

Tensor preprocess_image(const Image& image, const PreprocessConfig& config) {
  const Image crop = eval_resize_crop(image, config);
  const std::int64_t plane = crop.width * crop.height;
  Tensor tensor(DType::kF32, Shape{3, crop.height, crop.width});
  float* out = tensor.mutable_f32().data();
  // ToTensor divides by 255 in float32; Normalize subtracts and divides in float32: each step is
  // one correctly rounded operation, as in PyTorch.
  for (std::int64_t c = 0; c < 3; ++c) {
    const float mean = config.mean[static_cast<std::size_t>(c)];
    const float stdev = config.std[static_cast<std::size_t>(c)];
    float* dst = out + c * plane;
    for (std::int64_t i = 0; i < plane; ++i) {
      const float scaled = static_cast<float>(crop.rgb[static_cast<std::size_t>(i * 3 + c)]) / 255.0f;
      dst[i] = (scaled - mean) / stdev;
    }
  }
  return tensor;
}

}  // namespace kiln
