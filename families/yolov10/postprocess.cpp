#include "families/yolov10/postprocess.h"

#include <algorithm>

#include "core/error.h"
#include "eval/top_k.h"

namespace kiln {

std::vector<std::vector<Detection>> select_detections(const Tensor& decoded, std::int64_t max_det) {
  require(decoded.dtype() == DType::kF32 && decoded.rank() == 3 && decoded.dim(1) > 4,
          "detections: expected decoded predictions [N, 4 + classes, anchors] in f32, got ",
          shape_str(decoded.shape()));
  require(max_det > 0, "detections: max_det must be positive, got ", max_det);
  const std::int64_t batch = decoded.dim(0), classes = decoded.dim(1) - 4, anchors = decoded.dim(2);
  const auto xs = decoded.f32();
  std::vector<std::vector<Detection>> result(static_cast<std::size_t>(batch));
  for (std::int64_t n = 0; n < batch; ++n) {
    const auto at = [&](std::int64_t c, std::int64_t a) {
      return xs[static_cast<std::size_t>((n * (4 + classes) + c) * anchors + a)];
    };
    std::vector<float> best(static_cast<std::size_t>(anchors));
    for (std::int64_t a = 0; a < anchors; ++a) {
      float m = at(4, a);
      for (std::int64_t c = 1; c < classes; ++c) m = std::max(m, at(4 + c, a));
      best[static_cast<std::size_t>(a)] = m;
    }
    const auto kept = top_k_indices(best, static_cast<std::size_t>(max_det));
    std::vector<float> scores;
    scores.reserve(kept.size() * static_cast<std::size_t>(classes));
    for (const std::int64_t a : kept) {
      for (std::int64_t c = 0; c < classes; ++c) scores.push_back(at(4 + c, a));
    }
    for (const std::int64_t flat : top_k_indices(scores, static_cast<std::size_t>(max_det))) {
      const std::int64_t a = kept[static_cast<std::size_t>(flat / classes)];
      const float cx = at(0, a), cy = at(1, a), w = at(2, a), h = at(3, a);
      result[static_cast<std::size_t>(n)].push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2,
                                                     scores[static_cast<std::size_t>(flat)], flat % classes});
    }
  }
  return result;
}

}  // namespace kiln
