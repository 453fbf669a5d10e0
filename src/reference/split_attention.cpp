// Split attention (ResNeSt, timm's SplitAttn). A radix tensor's channels are laid out [radix][C]:
// radix_sum folds the radix splits together, radix_weighted_sum folds them with per-channel attention
// weights. radix_softmax turns fc2's logits, laid out [cardinality][radix][C / cardinality], into
// weights laid out [radix][cardinality][C / cardinality] (softmax across the radix), or applies a
// sigmoid when radix is 1.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {
namespace {

void check_attrs(std::string_view op, const RadixAttrs& attrs) {
  require(attrs.radix >= 1 && attrs.cardinality >= 1, op, ": expected radix >= 1 and cardinality >= 1, got ",
          attrs.radix, " and ", attrs.cardinality);
}

// Channels per radix split of a [N, radix * C, H, W] tensor.
std::int64_t split_channels(std::string_view op, const Tensor& x, const RadixAttrs& attrs) {
  detail::require_rank(op, "input", x, 4);
  check_attrs(op, attrs);
  require(x.dim(1) % attrs.radix == 0, op, ": input channels ", x.dim(1), " are not divisible by radix ",
          attrs.radix);
  return x.dim(1) / attrs.radix;
}

// A per-image channel vector: [N, K] or [N, K, 1, 1].
void require_channel_vector(std::string_view op, std::string_view role, const Tensor& t) {
  detail::require_f32(op, role, t);
  const bool ok = t.rank() == 2 || (t.rank() == 4 && t.dim(2) == 1 && t.dim(3) == 1);
  require(ok, op, ": expected ", role, " of shape [N, K] or [N, K, 1, 1], got ", shape_str(t.shape()));
}

}  // namespace

Tensor radix_sum(const Tensor& x, const RadixAttrs& attrs) {
  const std::int64_t channels = split_channels("radix_sum", x, attrs);
  const std::int64_t batch = x.dim(0), area = x.dim(2) * x.dim(3), radix = attrs.radix;
  Tensor y(DType::kF32, {batch, channels, x.dim(2), x.dim(3)});
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t i = 0; i < area; ++i) {
        double sum = 0.0;
        for (std::int64_t r = 0; r < radix; ++r) sum += xs[((n * radix + r) * channels + c) * area + i];
        out[(n * channels + c) * area + i] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

Tensor radix_softmax(const Tensor& logits, const RadixAttrs& attrs) {
  constexpr std::string_view kOp = "radix_softmax";
  require_channel_vector(kOp, "logits", logits);
  check_attrs(kOp, attrs);
  Tensor y(DType::kF32, logits.shape());
  const auto xs = logits.f32();
  const auto out = y.mutable_f32();
  if (attrs.radix == 1) {
    for (std::size_t i = 0; i < xs.size(); ++i) out[i] = static_cast<float>(detail::sigmoid(xs[i]));
    return y;
  }

  const std::int64_t batch = logits.dim(0), total = logits.dim(1);
  const std::int64_t radix = attrs.radix, cardinality = attrs.cardinality;
  require(total % (radix * cardinality) == 0, kOp, ": logit channels ", total,
          " are not divisible by radix * cardinality = ", radix * cardinality);
  const std::int64_t per_group = total / (radix * cardinality);
  std::vector<double> e(static_cast<std::size_t>(radix));
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* in = xs.data() + n * total;
    float* o = out.data() + n * total;
    for (std::int64_t g = 0; g < cardinality; ++g) {
      for (std::int64_t p = 0; p < per_group; ++p) {
        double peak = -std::numeric_limits<double>::infinity();
        for (std::int64_t r = 0; r < radix; ++r)
          peak = std::max<double>(peak, in[(g * radix + r) * per_group + p]);
        double sum = 0.0;
        for (std::int64_t r = 0; r < radix; ++r) {
          e[r] = std::exp(in[(g * radix + r) * per_group + p] - peak);  // shifted so exp cannot overflow
          sum += e[r];
        }
        for (std::int64_t r = 0; r < radix; ++r) {
          o[(r * cardinality + g) * per_group + p] = static_cast<float>(e[r] / sum);
        }
      }
    }
  }
  return y;
}

Tensor radix_weighted_sum(const Tensor& x, const Tensor& weights, const RadixAttrs& attrs) {
  constexpr std::string_view kOp = "radix_weighted_sum";
  const std::int64_t channels = split_channels(kOp, x, attrs);
  require_channel_vector(kOp, "weights", weights);
  const std::int64_t batch = x.dim(0), area = x.dim(2) * x.dim(3), radix = attrs.radix;
  require(weights.dim(0) == batch && weights.dim(1) == x.dim(1), kOp, ": expected weights of shape [", batch,
          ", ", x.dim(1), ", 1, 1] for input ", shape_str(x.shape()), ", got ", shape_str(weights.shape()));

  Tensor y(DType::kF32, {batch, channels, x.dim(2), x.dim(3)});
  const auto xs = x.f32();
  const auto ws = weights.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t i = 0; i < area; ++i) {
        double sum = 0.0;
        for (std::int64_t r = 0; r < radix; ++r) {
          const std::int64_t channel = (n * radix + r) * channels + c;
          sum += static_cast<double>(xs[channel * area + i]) * ws[channel];
        }
        out[(n * channels + c) * area + i] = static_cast<float>(sum);
      }
    }
  }
  return y;
}

}  // namespace kiln::reference
