#include "families/yolov10/letterbox.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "io/resample_tables.h"

namespace kiln {

namespace {

// Python's round(): halves to even.
std::int64_t round_half_even(double value) { return static_cast<std::int64_t>(std::nearbyint(value)); }

// The vertical pass of one output row from two horizontally resized rows, rounded as OpenCV's
// vectorised 8-bit path does: ((S0 >> 4) * b0 >> 16) + ((S1 >> 4) * b1 >> 16), + 2 >> 2.
void vertical_pass(const std::vector<int>& row0, const std::vector<int>& row1, const LinearTap& tap,
                   std::uint8_t* out) {
  for (std::size_t i = 0; i < row0.size(); ++i) {
    const int v = (((row0[i] >> 4) * tap.weight0) >> 16) + (((row1[i] >> 4) * tap.weight1) >> 16);
    out[i] = static_cast<std::uint8_t>(std::clamp((v + 2) >> 2, 0, 255));
  }
}

}  // namespace

Image resize_linear_cv(const Image& image, std::int64_t width, std::int64_t height) {
  require(image.width > 0 && image.height > 0 && width > 0 && height > 0, "resize: empty image or size");
  const auto xs = linear_taps(image.width, width, true), ys = linear_taps(image.height, height, false);
  const auto row_pass = [&](std::int64_t y, std::vector<int>& out) {
    const std::uint8_t* row =
        image.rgb.data() + std::clamp<std::int64_t>(y, 0, image.height - 1) * image.width * 3;
    for (std::int64_t x = 0; x < width; ++x) {
      const LinearTap& t = xs[static_cast<std::size_t>(x)];
      const std::int64_t next = std::min<std::int64_t>(t.index + 1, image.width - 1);
      for (int c = 0; c < 3; ++c) {
        out[static_cast<std::size_t>(x * 3 + c)] =
            row[t.index * 3 + c] * t.weight0 + row[next * 3 + c] * t.weight1;
      }
    }
  };
  Image result{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width * height * 3))};
  std::vector<int> row0(static_cast<std::size_t>(width * 3)), row1(row0.size());
  for (std::int64_t y = 0; y < height; ++y) {
    const LinearTap& t = ys[static_cast<std::size_t>(y)];
    row_pass(t.index, row0);
    row_pass(t.index + 1, row1);
    vertical_pass(row0, row1, t, result.rgb.data() + y * width * 3);
  }
  return result;
}

Letterbox letterbox_placement(std::int64_t width, std::int64_t height, std::int64_t size) {
  require(width > 0 && height > 0, "letterbox: empty image");
  Letterbox box;
  box.original_width = width;
  box.original_height = height;
  box.gain = std::min(static_cast<double>(size) / static_cast<double>(height),
                      static_cast<double>(size) / static_cast<double>(width));
  box.scaled_width = round_half_even(static_cast<double>(width) * box.gain);
  box.scaled_height = round_half_even(static_cast<double>(height) * box.gain);
  const double dw = static_cast<double>(size - box.scaled_width) / 2;
  const double dh = static_cast<double>(size - box.scaled_height) / 2;
  box.left = round_half_even(dw - 0.1);
  box.top = round_half_even(dh - 0.1);
  return box;
}

Letterbox letterbox(const Image& image, std::int64_t size) {
  Letterbox box = letterbox_placement(image.width, image.height, size);
  const std::int64_t width = box.scaled_width, height = box.scaled_height;
  const Image scaled =
      width == image.width && height == image.height ? image : resize_linear_cv(image, width, height);
  box.image =
      Image{size, size, std::vector<std::uint8_t>(static_cast<std::size_t>(size * size * 3), kLetterboxGrey)};
  for (std::int64_t y = 0; y < height && box.top + y < size; ++y) {
    std::copy_n(scaled.rgb.data() + y * width * 3, std::min(width, size - box.left) * 3,
                box.image.rgb.data() + ((box.top + y) * size + box.left) * 3);
  }
  return box;
}

Tensor letterbox_tensor(const Letterbox& box) {
  const std::int64_t size = box.image.width, area = size * box.image.height;
  Tensor x(DType::kF32, {3, box.image.height, size});
  const auto out = x.mutable_f32();
  for (std::int64_t i = 0; i < area; ++i) {
    for (std::int64_t c = 0; c < 3; ++c) {
      out[static_cast<std::size_t>(c * area + i)] =
          box.image.rgb[static_cast<std::size_t>(i * 3 + c)] / 255.0f;
    }
  }
  return x;
}

Detection to_original(const Detection& detection, const Letterbox& box) {
  const auto map = [&](float v, std::int64_t pad, std::int64_t limit) {
    const double original = (static_cast<double>(v) - static_cast<double>(pad)) / box.gain;
    return static_cast<float>(std::clamp(original, 0.0, static_cast<double>(limit)));
  };
  Detection d = detection;
  d.x1 = map(detection.x1, box.left, box.original_width);
  d.x2 = map(detection.x2, box.left, box.original_width);
  d.y1 = map(detection.y1, box.top, box.original_height);
  d.y2 = map(detection.y2, box.top, box.original_height);
  return d;
}

}  // namespace kiln
