#include "reference/detect_select.h"

#include <algorithm>

#include "reference/checks.h"
#include "reference/kernels.h"
#include "core/ranking.h"

namespace kiln::reference {

std::vector<std::vector<SelectedDetection>> select_detections(const Tensor& decoded, std::int64_t max_det) {
  constexpr std::string_view kOp = "detect_select";
  detail::require_rank(kOp, "decoded predictions [N, 4 + classes, anchors]", decoded, 3);
  require(decoded.dim(1) > 4, kOp, ": expected decoded predictions [N, 4 + classes, anchors], got ",
          shape_str(decoded.shape()));
  require(max_det > 0, kOp, ": max_det must be positive, got ", max_det);
  const std::int64_t batch = decoded.dim(0), classes = decoded.dim(1) - 4, anchors = decoded.dim(2);
  const auto xs = decoded.f32();
  std::vector<std::vector<SelectedDetection>> result(static_cast<std::size_t>(batch));
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

Tensor detect_select(const Tensor& decoded, const DetectSelectAttrs& attrs) {
  detail::require_rank("detect_select", "decoded predictions", decoded, 3);
  require(decoded.dim(2) >= attrs.max_det, "detect_select: expected at least max_det = ", attrs.max_det,
          " anchors, got ", shape_str(decoded.shape()));
  const auto images = select_detections(decoded, attrs.max_det);
  Tensor y(DType::kF32, {decoded.dim(0), attrs.max_det, 6});
  const auto out = y.mutable_f32();
  std::size_t at = 0;
  for (const auto& image : images) {
    for (const SelectedDetection& d : image) {
      for (const float v : {d.x1, d.y1, d.x2, d.y2, d.score, static_cast<float>(d.label)}) out[at++] = v;
    }
  }
  return y;
}

}  // namespace kiln::reference
