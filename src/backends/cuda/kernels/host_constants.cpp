#include "backends/cuda/kernels/host_constants.h"

#include <algorithm>
#include <cmath>

namespace kiln::cuda {

Tensor to_krsc(const Tensor& w) {
  const Tensor f = w.to(DType::kF32);
  const std::int64_t o = f.dim(0), in = f.dim(1), kh = f.dim(2), kw = f.dim(3);
  Tensor out(DType::kF32, {o, kh, kw, in});
  const auto src = f.f32();
  const auto dst = out.mutable_f32();
  for (std::int64_t a = 0; a < o; ++a)
    for (std::int64_t c = 0; c < in; ++c)
      for (std::int64_t y = 0; y < kh; ++y)
        for (std::int64_t x = 0; x < kw; ++x)
          dst[static_cast<std::size_t>(((a * kh + y) * kw + x) * in + c)] =
              src[static_cast<std::size_t>(((a * in + c) * kh + y) * kw + x)];
  return out;
}

Tensor block_diagonal(const Tensor& w, std::int64_t channels_in, std::int64_t groups) {
  const std::int64_t k = w.dim(0), r = w.dim(1), s = w.dim(2);
  const std::int64_t per_group_in = channels_in / groups, per_group_out = k / groups, taps = r * s;
  Tensor wide(DType::kF32, {k, r, s, channels_in});
  const auto src = w.f32();
  const auto dst = wide.mutable_f32();
  std::fill(dst.begin(), dst.end(), 0.0f);
  for (std::int64_t o = 0; o < k; ++o) {
    const std::int64_t first = o / per_group_out * per_group_in;
    for (std::int64_t tap = 0; tap < taps; ++tap) {
      for (std::int64_t i = 0; i < per_group_in; ++i) {
        dst[static_cast<std::size_t>((o * taps + tap) * channels_in + first + i)] =
            src[static_cast<std::size_t>((o * taps + tap) * per_group_in + i)];
      }
    }
  }
  return wide;
}

Tensor pad_taps(const Tensor& w, std::int64_t tap_channels) {
  const std::int64_t rows = w.dim(0) * w.dim(1) * w.dim(2), channels = w.dim(3);
  Tensor padded(DType::kF32, {w.dim(0), w.dim(1), w.dim(2), tap_channels});
  const auto src = w.f32();
  const auto dst = padded.mutable_f32();
  std::fill(dst.begin(), dst.end(), 0.0f);
  for (std::int64_t row = 0; row < rows; ++row) {
    std::copy_n(src.begin() + row * channels, channels, dst.begin() + row * tap_channels);
  }
  return padded;
}

Tensor depthwise_taps(const Tensor& w) {
  const std::int64_t channels = w.dim(0), taps = w.dim(1) * w.dim(2);
  Tensor out(DType::kF32, {w.dim(1), w.dim(2), channels});
  const auto src = w.f32();
  const auto dst = out.mutable_f32();
  for (std::int64_t c = 0; c < channels; ++c)
    for (std::int64_t tap = 0; tap < taps; ++tap)
      dst[static_cast<std::size_t>(tap * channels + c)] = src[static_cast<std::size_t>(c * taps + tap)];
  return out;
}

Tensor narrow_conv_taps(const Tensor& w) {
  const std::int64_t out = w.dim(0), rows = w.dim(1) * w.dim(2) * w.dim(3);  // rows: (tap, input channel)
  Tensor taps(DType::kF32, {w.dim(1), w.dim(2), w.dim(3), out});
  const auto src = w.f32();
  const auto dst = taps.mutable_f32();
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t r = 0; r < rows; ++r)
      dst[static_cast<std::size_t>(r * out + o)] = src[static_cast<std::size_t>(o * rows + r)];
  return taps;
}

Tensor mma_conv_fragments(const Tensor& w) {
  const std::int64_t out = w.dim(0), taps = w.dim(1) * w.dim(2), in = w.dim(3);
  const std::int64_t steps = taps * in / 16, tiles = out / 8;
  Tensor fragments(DType::kF32, {steps, tiles, 32, 4});
  const auto src = w.f32();
  const auto dst = fragments.mutable_f32();
  constexpr std::int64_t kChannelOfValue[4] = {0, 1, 8, 9};
  for (std::int64_t step = 0; step < steps; ++step) {
    const std::int64_t tap = step / (in / 16), first = step % (in / 16) * 16;
    for (std::int64_t tile = 0; tile < tiles; ++tile) {
      for (std::int64_t lane = 0; lane < 32; ++lane) {
        const std::int64_t o = tile * 8 + lane / 4;
        for (std::int64_t v = 0; v < 4; ++v) {
          const std::int64_t i = first + 2 * (lane % 4) + kChannelOfValue[v];
          dst[static_cast<std::size_t>(((step * tiles + tile) * 32 + lane) * 4 + v)] =
              src[static_cast<std::size_t>((o * taps + tap) * in + i)];
        }
      }
    }
  }
  return fragments;
}

ScaleShift fold_batch_norm(const Tensor& gamma_in, const Tensor& beta_in, const Tensor& mean_in,
                           const Tensor& var_in, float epsilon) {
  const Tensor gamma = gamma_in.to(DType::kF32), beta = beta_in.to(DType::kF32);
  const Tensor mean = mean_in.to(DType::kF32), var = var_in.to(DType::kF32);
  const std::int64_t channels = gamma.numel();
  ScaleShift folded{Tensor(DType::kF32, {channels}), Tensor(DType::kF32, {channels})};
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const double s = gamma.f32()[i] / std::sqrt(static_cast<double>(var.f32()[i]) + epsilon);
    folded.scale.mutable_f32()[i] = static_cast<float>(s);
    folded.shift.mutable_f32()[i] = static_cast<float>(beta.f32()[i] - mean.f32()[i] * s);
  }
  return folded;
}

Tensor fp8_output_scales(float input_scale, const Tensor& weight_scales_in, std::int64_t channels) {
  const Tensor weight_scales = weight_scales_in.to(DType::kF32);
  Tensor scale(DType::kF32, {channels});
  for (std::int64_t k = 0; k < channels; ++k) {
    const auto i = static_cast<std::size_t>(k);
    scale.mutable_f32()[i] = input_scale * weight_scales.f32()[weight_scales.numel() == 1 ? 0 : i];
  }
  return scale;
}

}  // namespace kiln::cuda
