// Per-element operators: inference batch norm, activations and the residual add.
#include <cmath>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {

Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, float epsilon) {
  constexpr std::string_view kOp = "batch_norm";
  detail::require_f32(kOp, "input", x);
  require(x.rank() >= 2, kOp, ": expected input of rank >= 2 with channels on axis 1, got ",
          shape_str(x.shape()));
  const std::int64_t channels = x.dim(1);
  detail::require_vector(kOp, "gamma", gamma, channels);
  detail::require_vector(kOp, "beta", beta, channels);
  detail::require_vector(kOp, "running mean", mean, channels);
  detail::require_vector(kOp, "running var", var, channels);

  std::int64_t inner = 1;  // elements per (image, channel)
  for (std::size_t axis = 2; axis < x.rank(); ++axis) inner *= x.dim(axis);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  std::size_t i = 0;
  for (std::int64_t n = 0; n < x.dim(0); ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const double scale =
          static_cast<double>(gamma.f32()[c]) / std::sqrt(static_cast<double>(var.f32()[c]) + epsilon);
      const double m = mean.f32()[c];
      const double shift = beta.f32()[c];
      for (std::int64_t k = 0; k < inner; ++k, ++i) out[i] = static_cast<float>((xs[i] - m) * scale + shift);
    }
  }
  return y;
}

Tensor activation(const Tensor& x, Activation activation) {
  detail::require_f32("activation", "input", x);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::size_t i = 0; i < xs.size(); ++i)
    out[i] = static_cast<float>(detail::activate(xs[i], activation));
  return y;
}

Tensor add(const Tensor& a, const Tensor& b, Activation activation) {
  detail::require_f32("add", "first input", a);
  detail::require_f32("add", "second input", b);
  require(a.shape() == b.shape(), "add: expected inputs of equal shape, got ", shape_str(a.shape()), " and ",
          shape_str(b.shape()));
  Tensor y(DType::kF32, a.shape());
  const auto as = a.f32();
  const auto bs = b.f32();
  const auto out = y.mutable_f32();
  for (std::size_t i = 0; i < as.size(); ++i) {
    out[i] = static_cast<float>(detail::activate(static_cast<double>(as[i]) + bs[i], activation));
  }
  return y;
}

Tensor channel_scale(const Tensor& x, const Tensor& gate) {
  constexpr std::string_view kOp = "channel_scale";
  detail::require_f32(kOp, "input", x);
  detail::require_f32(kOp, "gate", gate);
  detail::require_rank(kOp, "input", x, 4);
  require(gate.shape() == Shape{x.dim(0), x.dim(1), 1, 1}, kOp, ": expected a gate of shape [", x.dim(0),
          ", ", x.dim(1), ", 1, 1] for input ", shape_str(x.shape()), ", got ", shape_str(gate.shape()));
  const std::int64_t planes = x.dim(0) * x.dim(1), area = x.dim(2) * x.dim(3);
  Tensor y(DType::kF32, x.shape());
  const auto xs = x.f32();
  const auto gs = gate.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const double g = gs[static_cast<std::size_t>(plane)];
    for (std::int64_t i = plane * area; i < (plane + 1) * area; ++i) {
      out[static_cast<std::size_t>(i)] = static_cast<float>(xs[static_cast<std::size_t>(i)] * g);
    }
  }
  return y;
}

}  // namespace kiln::reference
