// YOLO's letterbox preprocessing (the YOLOv10 code's LetterBox with auto=False): the image scaled to fit
// a size x size square with its aspect ratio kept (OpenCV's INTER_LINEAR on 8-bit pixels), centred, the
// rest filled with grey 114; the network reads it as RGB / 255. Boxes found on the letterboxed image are
// mapped back to the original with the same gain and padding.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "families/yolov10/postprocess.h"
#include "io/image.h"

namespace kiln {

struct Letterbox {
  Image image;                                       // size x size RGB
  double gain = 1.0;                                 // letterboxed pixels per original pixel
  std::int64_t left = 0, top = 0;                    // padding before the scaled image
  std::int64_t scaled_width = 0, scaled_height = 0;  // the scaled image inside the square
  std::int64_t original_width = 0, original_height = 0;
};

inline constexpr std::uint8_t kLetterboxGrey = 114;

Letterbox letterbox(const Image& image, std::int64_t size);
// The same geometry (gain, padding, scaled size) for an image of width x height, without the pixels.
Letterbox letterbox_placement(std::int64_t width, std::int64_t height, std::int64_t size);

// OpenCV's cv::resize with INTER_LINEAR for 8-bit images: half-pixel centres, 11-bit fixed-point weights.
Image resize_linear_cv(const Image& image, std::int64_t width, std::int64_t height);

// [3, size, size] float32, RGB / 255.
Tensor letterbox_tensor(const Letterbox& box);

// A detection on the letterboxed image in original image pixels, clipped to the image.
Detection to_original(const Detection& detection, const Letterbox& box);

}  // namespace kiln
