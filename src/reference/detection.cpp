// Operators of detection networks (YOLOv10): joining and slicing channels, nearest upsampling, attention
// over the pixels of an image and the decoding of one level of the detection head.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {

Tensor concat(const std::vector<const Tensor*>& inputs, std::int64_t axis) {
  constexpr std::string_view kOp = "concat";
  require(!inputs.empty(), kOp, ": expected at least one input");
  const Tensor& first = *inputs[0];
  detail::require_f32(kOp, "input 0", first);
  require(axis >= 1 && static_cast<std::size_t>(axis) < first.rank(), kOp, ": axis ", axis,
          " is not a non-batch axis of ", shape_str(first.shape()));
  const auto a = static_cast<std::size_t>(axis);
  Shape out_shape = first.shape();
  out_shape[a] = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    detail::require_f32(kOp, "an input", t);
    Shape expected = first.shape();
    expected[a] = t.rank() == first.rank() ? t.dim(a) : -1;
    require(t.shape() == expected, kOp, ": input ", i, " has shape ", shape_str(t.shape()),
            ", which differs from input 0's ", shape_str(first.shape()), " outside axis ", axis);
    out_shape[a] += t.dim(a);
  }
  // Rows before the axis (outer), each input's block of dim(axis) * inner floats per row.
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < a; ++d) outer *= first.dim(d);
  for (std::size_t d = a + 1; d < first.rank(); ++d) inner *= first.dim(d);
  Tensor y(DType::kF32, out_shape);
  const auto out = y.mutable_f32();
  std::size_t at = 0;
  for (std::int64_t row = 0; row < outer; ++row) {
    for (const Tensor* t : inputs) {
      const auto block = static_cast<std::size_t>(t->dim(a) * inner);
      const auto xs = t->f32();
      std::copy_n(xs.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(row) * block), block,
                  out.begin() + static_cast<std::ptrdiff_t>(at));
      at += block;
    }
  }
  return y;
}

Tensor channel_slice(const Tensor& x, const SliceAttrs& attrs) {
  constexpr std::string_view kOp = "channel_slice";
  detail::require_f32(kOp, "input", x);
  require(x.rank() >= 2, kOp, ": expected an input of rank >= 2, got ", shape_str(x.shape()));
  require(attrs.groups >= 1 && x.dim(1) % attrs.groups == 0, kOp, ": ", x.dim(1),
          " channels do not split into ", attrs.groups, " groups");
  const std::int64_t group = x.dim(1) / attrs.groups;
  require(attrs.begin >= 0 && attrs.begin < attrs.end && attrs.end <= group, kOp, ": slice [", attrs.begin,
          ", ", attrs.end, ") is not inside a group of ", group, " channels");
  std::int64_t inner = 1;
  for (std::size_t d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  Shape out_shape = x.shape();
  out_shape[1] = attrs.groups * (attrs.end - attrs.begin);
  Tensor y(DType::kF32, out_shape);
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  const auto count = static_cast<std::size_t>((attrs.end - attrs.begin) * inner);
  std::size_t at = 0;
  for (std::int64_t n = 0; n < x.dim(0); ++n) {
    for (std::int64_t g = 0; g < attrs.groups; ++g) {
      const auto from = static_cast<std::size_t>(((n * attrs.groups + g) * group + attrs.begin) * inner);
      std::copy_n(xs.begin() + static_cast<std::ptrdiff_t>(from), count,
                  out.begin() + static_cast<std::ptrdiff_t>(at));
      at += count;
    }
  }
  return y;
}

Tensor upsample_nearest(const Tensor& x, std::int64_t scale) {
  constexpr std::string_view kOp = "upsample";
  detail::require_rank(kOp, "input", x, 4);
  require(scale >= 1, kOp, ": expected a positive scale, got ", scale);
  const std::int64_t planes = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensor y(DType::kF32, {x.dim(0), x.dim(1), h * scale, w * scale});
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  std::size_t at = 0;
  for (std::int64_t p = 0; p < planes; ++p) {
    for (std::int64_t oy = 0; oy < h * scale; ++oy) {
      for (std::int64_t ox = 0; ox < w * scale; ++ox) {
        out[at++] = xs[static_cast<std::size_t>((p * h + oy / scale) * w + ox / scale)];
      }
    }
  }
  return y;
}

Tensor attention(const Tensor& qkv, const AttentionAttrs& attrs) {
  constexpr std::string_view kOp = "attention";
  detail::require_rank(kOp, "input", qkv, 4);
  const std::int64_t heads = attrs.heads, kd = attrs.key_dim, hd = attrs.head_dim;
  require(heads >= 1 && kd >= 1 && hd >= 1 && qkv.dim(1) == heads * (2 * kd + hd), kOp, ": expected ",
          heads * (2 * kd + hd), " channels (heads x (2 key_dim + head_dim)), got ", shape_str(qkv.shape()));
  const std::int64_t batch = qkv.dim(0), pixels = qkv.dim(2) * qkv.dim(3);
  // The scale is what PyTorch multiplies by: key_dim ** -0.5 rounded to float.
  const double scale = static_cast<float>(std::pow(static_cast<double>(kd), -0.5));
  Tensor y(DType::kF32, {batch, heads * hd, qkv.dim(2), qkv.dim(3)});
  const auto xs = qkv.f32();
  const auto out = y.mutable_f32();
  std::vector<double> weights(static_cast<std::size_t>(pixels));
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t base = (n * heads + h) * (2 * kd + hd);
      const auto channel = [&](std::int64_t c, std::int64_t i) {
        return static_cast<double>(xs[static_cast<std::size_t>((base + c) * pixels + i)]);
      };
      for (std::int64_t i = 0; i < pixels; ++i) {
        double peak = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < pixels; ++j) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < kd; ++d) dot += channel(d, i) * channel(kd + d, j);
          weights[static_cast<std::size_t>(j)] = dot * scale;
          peak = std::max(peak, dot * scale);
        }
        double sum = 0.0;
        for (double& w : weights) {
          w = std::exp(w - peak);  // shifted so exp cannot overflow
          sum += w;
        }
        for (std::int64_t d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (std::int64_t j = 0; j < pixels; ++j)
            acc += channel(2 * kd + d, j) * weights[static_cast<std::size_t>(j)];
          out[static_cast<std::size_t>(((n * heads + h) * hd + d) * pixels + i)] =
              static_cast<float>(acc / sum);
        }
      }
    }
  }
  return y;
}

Tensor detect_decode(const Tensor& x, const DetectAttrs& attrs) {
  constexpr std::string_view kOp = "detect_decode";
  detail::require_rank(kOp, "input", x, 4);
  const std::int64_t bins = attrs.reg_max, box_channels = 4 * attrs.reg_max;
  require(bins >= 1 && attrs.stride >= 1 && x.dim(1) > box_channels, kOp, ": expected more than ",
          box_channels, " channels (4 x reg_max) and a positive stride, got ", shape_str(x.shape()),
          " and stride ", attrs.stride);
  const std::int64_t batch = x.dim(0), classes = x.dim(1) - box_channels, height = x.dim(2), width = x.dim(3);
  const std::int64_t pixels = height * width;
  const auto stride = static_cast<double>(attrs.stride);
  Tensor y(DType::kF32, {batch, 4 + classes, pixels});
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  for (std::int64_t n = 0; n < batch; ++n) {
    const auto in = [&](std::int64_t c, std::int64_t i) {
      return static_cast<double>(xs[static_cast<std::size_t>((n * x.dim(1) + c) * pixels + i)]);
    };
    const auto put = [&](std::int64_t c, std::int64_t i, double v) {
      out[static_cast<std::size_t>((n * (4 + classes) + c) * pixels + i)] = static_cast<float>(v);
    };
    for (std::int64_t i = 0; i < pixels; ++i) {
      double side[4];  // distances left, top, right, bottom in cells: the mean of each softmax over the bins
      for (std::int64_t s = 0; s < 4; ++s) {
        double peak = -std::numeric_limits<double>::infinity();
        for (std::int64_t b = 0; b < bins; ++b) peak = std::max(peak, in(s * bins + b, i));
        double sum = 0.0, mean = 0.0;
        for (std::int64_t b = 0; b < bins; ++b) {
          const double e = std::exp(in(s * bins + b, i) - peak);
          sum += e;
          mean += e * static_cast<double>(b);
        }
        side[s] = mean / sum;
      }
      const double cx = static_cast<double>(i % width) + 0.5, cy = static_cast<double>(i / width) + 0.5;
      const double x1 = cx - side[0], y1 = cy - side[1], x2 = cx + side[2], y2 = cy + side[3];
      put(0, i, (x1 + x2) / 2 * stride);
      put(1, i, (y1 + y2) / 2 * stride);
      put(2, i, (x2 - x1) * stride);
      put(3, i, (y2 - y1) * stride);
      for (std::int64_t c = 0; c < classes; ++c) put(4 + c, i, detail::sigmoid(in(box_channels + c, i)));
    }
  }
  return y;
}

}  // namespace kiln::reference
