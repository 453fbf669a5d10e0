// Preprocessing on the GPU (backends/cuda/device_preprocess.h) against the CPU path it must equal bit for
// bit: timm's eval transform (preprocess_image, itself checked against Pillow) and YOLO's letterbox
// (letterbox_tensor, checked against OpenCV). Every shipped photo, each interpolation and crop, and small
// images that upscale or keep an axis's size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "families/yolov10/letterbox.h"
#include "io/image.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/device_preprocess.h"
#endif

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

[[maybe_unused]] std::vector<fs::path> shipped_photos() {
  std::vector<fs::path> photos;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_TEST_DATA_DIR) / "photos")) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".jpg" || ext == ".png") photos.push_back(entry.path());
  }
  std::sort(photos.begin(), photos.end());
  return photos;
}

// A deterministic RGB pattern (edges and gradients, so every tap's weight matters).
[[maybe_unused]] Image pattern(std::int64_t width, std::int64_t height) {
  Image image{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width * height * 3))};
  for (std::size_t i = 0; i < image.rgb.size(); ++i)
    image.rgb[i] = static_cast<std::uint8_t>((i * 37 + i / 7) % 256);
  return image;
}

#if KILN_HAVE_CUDA

// The device's f32 output copied back.
class DeviceOutput {
 public:
  explicit DeviceOutput(std::int64_t values) : buffer_(static_cast<std::size_t>(values) * sizeof(float)) {}
  float* data() { return static_cast<float*>(buffer_.data()); }
  std::vector<float> read() {
    std::vector<float> host(buffer_.bytes() / sizeof(float));
    cuda::check(cudaDeviceSynchronize(), "preprocessing");
    cuda::check(cudaMemcpy(host.data(), buffer_.data(), buffer_.bytes(), cudaMemcpyDeviceToHost),
                "reading back");
    return host;
  }

 private:
  cuda::DeviceBuffer buffer_;
};

// Values that differ, bit for bit (so -0 against +0 or two NaNs count too).
std::int64_t differing(const std::vector<float>& device, std::span<const float> host) {
  if (device.size() != host.size()) return -1;
  std::int64_t count = 0;
  for (std::size_t i = 0; i < host.size(); ++i)
    count += std::memcmp(&device[i], &host[i], sizeof(float)) != 0;
  return count;
}

void expect_eval_transform_equal(cuda::DevicePreprocessor& preprocessor, const Image& image,
                                 const PreprocessConfig& config, const std::string& what) {
  const Tensor expected = preprocess_image(image, config);
  DeviceOutput out(expected.numel());
  preprocessor.eval_transform(image, config, out.data(), nullptr);
  EXPECT_EQ(differing(out.read(), expected.f32()), 0) << what;
}

void expect_letterbox_equal(cuda::DevicePreprocessor& preprocessor, const Image& image, std::int64_t size,
                            const std::string& what) {
  const Letterbox box = letterbox(image, size);
  const Tensor expected = letterbox_tensor(box);
  DeviceOutput out(expected.numel());
  preprocessor.letterbox(image,
                         {size, box.scaled_width, box.scaled_height, box.left, box.top, kLetterboxGrey},
                         out.data(), nullptr);
  EXPECT_EQ(differing(out.read(), expected.f32()), 0) << what;
}

#endif

TEST(CudaPreprocess, EvalTransformEqualsTheCpuPathOnEveryPhoto) {
  KILN_SKIP_WITHOUT_GPU();
#if KILN_HAVE_CUDA
  cuda::DevicePreprocessor preprocessor;
  for (const fs::path& photo : shipped_photos()) {
    const Image image = decode_image(photo);
    for (const Interpolation interpolation :
         {Interpolation::kBilinear, Interpolation::kBicubic, Interpolation::kNearest}) {
      for (const double crop_pct : {0.875, 0.95, 1.0}) {
        PreprocessConfig config;
        config.input_size = 224;
        config.crop_pct = crop_pct;
        config.interpolation = interpolation;
        expect_eval_transform_equal(preprocessor, image, config,
                                    photo.filename().string() + " crop_pct " + std::to_string(crop_pct) +
                                        " interpolation " + std::to_string(static_cast<int>(interpolation)));
      }
    }
  }
#endif
}

TEST(CudaPreprocess, EvalTransformEqualsTheCpuPathWhenUpscalingOrKeepingAnAxis) {
  KILN_SKIP_WITHOUT_GPU();
#if KILN_HAVE_CUDA
  cuda::DevicePreprocessor preprocessor;
  // 7x5 and 3x11 upscale both axes; 256x300 keeps its width at 224 / 0.875 = 256; 1x1 is one pixel.
  for (const auto& [width, height] : std::vector<std::pair<int, int>>{{7, 5}, {3, 11}, {256, 300}, {1, 1}}) {
    for (const Interpolation interpolation :
         {Interpolation::kBilinear, Interpolation::kBicubic, Interpolation::kNearest}) {
      PreprocessConfig config;
      config.input_size = 224;
      config.interpolation = interpolation;
      expect_eval_transform_equal(preprocessor, pattern(width, height), config,
                                  std::to_string(width) + "x" + std::to_string(height));
    }
  }
#endif
}

TEST(CudaPreprocess, LetterboxEqualsTheCpuPath) {
  KILN_SKIP_WITHOUT_GPU();
#if KILN_HAVE_CUDA
  cuda::DevicePreprocessor preprocessor;
  for (const fs::path& photo : shipped_photos()) {
    const Image image = decode_image(photo);
    for (const std::int64_t size : {640, 320, 256}) {
      expect_letterbox_equal(preprocessor, image, size,
                             photo.filename().string() + " at " + std::to_string(size));
    }
  }
  for (const auto& [width, height] :
       std::vector<std::pair<int, int>>{{37, 41}, {300, 10}, {320, 320}, {1, 1}}) {
    expect_letterbox_equal(preprocessor, pattern(width, height), 320,
                           std::to_string(width) + "x" + std::to_string(height));
  }
#endif
}

TEST(CudaPreprocess, AnEmptyImageOrAPlacementOutsideTheSquareIsRefused) {
  KILN_SKIP_WITHOUT_GPU();
#if KILN_HAVE_CUDA
  cuda::DevicePreprocessor preprocessor;
  cuda::DeviceBuffer out(3 * 64 * 64 * sizeof(float));
  PreprocessConfig config;
  config.input_size = 64;
  EXPECT_THROW(preprocessor.eval_transform(Image{}, config, static_cast<float*>(out.data()), nullptr), Error);
  EXPECT_THROW(preprocessor.letterbox(pattern(10, 10), {64, 60, 60, 10, 0, 114},
                                      static_cast<float*>(out.data()), nullptr),
               Error);
#endif
}

}  // namespace
}  // namespace kiln::testing
