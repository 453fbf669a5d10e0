// timm's eval transform for crop_mode "center" with a square input size (timm 1.0
// transforms_imagenet_eval): torchvision Resize(floor(size / crop_pct)) of the shorter side,
// CenterCrop(size), ToTensor, Normalize(mean, std), all on the PIL path.
#include <cstdint>

#include "io/image.h"

namespace kiln {

Image eval_resize_crop(const Image& image, const PreprocessConfig& config) {
  const EvalResize geometry = eval_resize_geometry(image.width, image.height, config);
  return resize_crop(image, geometry.width, geometry.height, config.interpolation, geometry.window);
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
