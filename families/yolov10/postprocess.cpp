#include "families/yolov10/postprocess.h"

#include "core/error.h"

namespace kiln {

std::vector<std::vector<Detection>> select_detections(const Tensor& decoded, std::int64_t max_det) {
  return reference::select_detections(decoded, max_det);
}

std::vector<std::vector<Detection>> detections_from_rows(const Tensor& selected) {
  require(selected.dtype() == DType::kF32 && selected.rank() == 3 && selected.dim(2) == 6,
          "detections: expected detect_select's rows [N, max_det, 6] in f32, got ",
          shape_str(selected.shape()));
  const auto xs = selected.f32();
  std::vector<std::vector<Detection>> result(static_cast<std::size_t>(selected.dim(0)));
  std::size_t at = 0;
  for (auto& image : result) {
    for (std::int64_t r = 0; r < selected.dim(1); ++r, at += 6) {
      image.push_back(
          {xs[at], xs[at + 1], xs[at + 2], xs[at + 3], xs[at + 4], static_cast<std::int64_t>(xs[at + 5])});
    }
  }
  return result;
}

}  // namespace kiln
