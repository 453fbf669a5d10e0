// Classification for library callers: an encoded image or pixels in memory, preprocessed as the plan's
// config says (timm's eval transform), run on a context, ranked into the top k with the plan's labels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/image.h"
#include "sdk/sdk_engine.h"

namespace kiln::embed {

enum class PixelLayout { kRgb8, kBgr8, kRgba8, kBgra8, kGray8 };

// Interleaved 8-bit pixels the caller owns; rows `row_stride` bytes apart (0: tightly packed).
struct PixelsView {
  const std::uint8_t* pixels = nullptr;
  std::int64_t width = 0;
  std::int64_t height = 0;
  std::size_t row_stride = 0;
  PixelLayout layout = PixelLayout::kRgb8;
};

// The pixels as RGB; fails with InvalidArgument on a NULL pointer, an empty size or a short stride.
// `name` stands for the image in messages.
Image image_from_pixels(const PixelsView& view, const std::string& name = "image");

// An encoded JPEG, PNG or WebP in memory, decoded to RGB; `name` stands for it in messages.
Image image_from_bytes(std::span<const std::uint8_t> bytes, const std::string& name);

struct ClassScore {
  std::int64_t index = 0;
  double probability = 0;  // softmax over every logit
  double logit = 0;
  std::string label;  // the plan's label, ImageNet's for 1000 classes, else "class N"
};

// Runs `image` as row 0 of a batch (the other rows zeros) and ranks row 0's logits, best first.
std::vector<ClassScore> classify(SdkContext& context, const Image& image, std::size_t top_k);

}  // namespace kiln::embed
