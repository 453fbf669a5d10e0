// The classifier head: global average pooling, flatten and the fully connected layer.
#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {

Tensor global_avg_pool(const Tensor& x) {
  detail::require_rank("global_avg_pool", "input", x, 4);
  const std::int64_t planes = x.dim(0) * x.dim(1), area = x.dim(2) * x.dim(3);
  require(area > 0, "global_avg_pool: expected a non-empty spatial extent, got ", shape_str(x.shape()));
  Tensor y(DType::kF32, {x.dim(0), x.dim(1), 1, 1});
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t p = 0; p < planes; ++p) {
    double sum = 0.0;
    for (std::int64_t i = 0; i < area; ++i) sum += xs[p * area + i];
    out[p] = static_cast<float>(sum / static_cast<double>(area));
  }
  return y;
}

Tensor flatten(const Tensor& x) {
  detail::require_f32("flatten", "input", x);
  require(x.rank() >= 2, "flatten: expected input of rank >= 2, got ", shape_str(x.shape()));
  std::int64_t features = 1;
  for (std::size_t axis = 1; axis < x.rank(); ++axis) features *= x.dim(axis);
  return x.clone().reshaped({x.dim(0), features});
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias) {
  constexpr std::string_view kOp = "linear";
  detail::require_rank(kOp, "input", x, 2);
  detail::require_rank(kOp, "weight", weight, 2);
  const std::int64_t rows = x.dim(0), features = x.dim(1), outputs = weight.dim(0);
  require(weight.dim(1) == features, kOp, ": expected weight of shape [", outputs, ", ", features,
          "] for input ", shape_str(x.shape()), ", got ", shape_str(weight.shape()));
  if (bias != nullptr) detail::require_vector(kOp, "bias", *bias, outputs);

  Tensor y(DType::kF32, {rows, outputs});
  const auto xs = x.f32();
  const auto ws = weight.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t m = 0; m < outputs; ++m) {
      double sum = bias != nullptr ? static_cast<double>(bias->f32()[m]) : 0.0;
      for (std::int64_t k = 0; k < features; ++k) {
        sum += static_cast<double>(xs[n * features + k]) * ws[m * features + k];
      }
      out[n * outputs + m] = static_cast<float>(sum);
    }
  }
  return y;
}

}  // namespace kiln::reference
