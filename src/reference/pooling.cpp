// Max and average pooling with PyTorch's window rules. A window covers [start, start + kernel) in
// padded coordinates (start = o * stride - pad_begin); only the part inside the input is read.
// Max pooling treats padding as -inf, so it never selects it. Average pooling divides by the window
// clipped to the padded input [-pad_begin, in + pad_end) when count_include_pad is set (a ceil_mode
// window hanging past the padded end counts fewer elements), and by the valid input elements otherwise.
#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/checks.h"
#include "reference/kernels.h"

namespace kiln::reference {
namespace {

// One axis of a window: the input range it reads and its divisor extent when padding counts.
struct WindowAxis {
  std::int64_t begin;   // first input index read
  std::int64_t end;     // one past the last input index read
  std::int64_t padded;  // extent clipped to [-pad_begin, in + pad_end)
};

WindowAxis window_axis(std::int64_t o, std::int64_t in, std::int64_t kernel, std::int64_t stride,
                       std::int64_t pad_begin, std::int64_t pad_end) {
  const std::int64_t start = o * stride - pad_begin;
  const std::int64_t stop = std::min(start + kernel, in + pad_end);
  return {std::max<std::int64_t>(start, 0), std::min(stop, in), stop - start};
}

struct PoolGeometry {
  std::int64_t batch, channels, in_h, in_w, out_h, out_w;
};

PoolGeometry check_pool(std::string_view op, const Tensor& x, const PoolAttrs& attrs) {
  detail::require_rank(op, "input", x, 4);
  for (std::size_t i = 0; i < 2; ++i) {
    require(attrs.kernel[i] >= 1, op, ": expected kernel extents >= 1, got ", attrs.kernel[i]);
    require(attrs.stride[i] >= 1, op, ": expected strides >= 1, got ", attrs.stride[i]);
  }
  // A pad as large as the kernel would allow windows made only of padding (max over nothing).
  for (std::size_t i = 0; i < 4; ++i) {
    const std::int64_t kernel = attrs.kernel[i % 2];
    require(attrs.padding[i] >= 0 && attrs.padding[i] < kernel, op, ": expected padding in [0, ", kernel,
            ") for kernel extent ", kernel, ", got ", attrs.padding[i]);
  }
  const auto [pad_top, pad_left, pad_bottom, pad_right] = attrs.padding;
  PoolGeometry g{x.dim(0), x.dim(1), x.dim(2), x.dim(3), 0, 0};
  g.out_h = pooled_extent(g.in_h, attrs.kernel[0], attrs.stride[0], pad_top, pad_bottom, attrs.ceil_mode);
  g.out_w = pooled_extent(g.in_w, attrs.kernel[1], attrs.stride[1], pad_left, pad_right, attrs.ceil_mode);
  return g;
}

// Calls reduce(plane, window_y, window_x) for every output element and stores what it returns.
template <typename Reduce>
Tensor pool(const Tensor& x, const PoolAttrs& attrs, const PoolGeometry& g, Reduce reduce) {
  Tensor y(DType::kF32, {g.batch, g.channels, g.out_h, g.out_w});
  const auto xs = x.f32();
  const auto out = y.mutable_f32();
  const auto [pad_top, pad_left, pad_bottom, pad_right] = attrs.padding;
  std::size_t o = 0;
  for (std::int64_t plane = 0; plane < g.batch * g.channels; ++plane) {
    const float* in = xs.data() + plane * g.in_h * g.in_w;
    for (std::int64_t oy = 0; oy < g.out_h; ++oy) {
      const WindowAxis wy = window_axis(oy, g.in_h, attrs.kernel[0], attrs.stride[0], pad_top, pad_bottom);
      for (std::int64_t ox = 0; ox < g.out_w; ++ox) {
        const WindowAxis wx = window_axis(ox, g.in_w, attrs.kernel[1], attrs.stride[1], pad_left, pad_right);
        out[o++] = reduce(in, wy, wx);
      }
    }
  }
  return y;
}

}  // namespace

std::int64_t pooled_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                           std::int64_t pad_end, bool ceil_mode) {
  require(kernel >= 1 && stride >= 1 && pad_begin >= 0 && pad_end >= 0,
          "pooled_extent: expected kernel >= 1, stride >= 1 and padding >= 0, got kernel ", kernel,
          ", stride ", stride, ", padding ", pad_begin, "/", pad_end);
  const std::int64_t span = in + pad_begin + pad_end - kernel;
  require(span >= 0, "pooling: kernel extent ", kernel, " is larger than the padded input extent ",
          in + pad_begin + pad_end);
  std::int64_t out = (ceil_mode ? detail::ceil_div(span, stride) : span / stride) + 1;
  // The last window must start inside the input or the begin padding, never in the end padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

Tensor max_pool2d(const Tensor& x, const PoolAttrs& attrs) {
  const PoolGeometry g = check_pool("max_pool2d", x, attrs);
  const std::int64_t width = g.in_w;
  return pool(x, attrs, g, [width](const float* in, const WindowAxis& wy, const WindowAxis& wx) {
    float best = -std::numeric_limits<float>::infinity();
    for (std::int64_t iy = wy.begin; iy < wy.end; ++iy) {
      for (std::int64_t ix = wx.begin; ix < wx.end; ++ix) {
        const float v = in[iy * width + ix];
        if (v > best || std::isnan(v)) best = v;  // NaN propagates, as in PyTorch
        if (std::isnan(best)) return best;
      }
    }
    return best;
  });
}

Tensor avg_pool2d(const Tensor& x, const PoolAttrs& attrs) {
  const PoolGeometry g = check_pool("avg_pool2d", x, attrs);
  const std::int64_t width = g.in_w;
  const bool count_pad = attrs.count_include_pad;
  return pool(x, attrs, g, [width, count_pad](const float* in, const WindowAxis& wy, const WindowAxis& wx) {
    double sum = 0.0;
    for (std::int64_t iy = wy.begin; iy < wy.end; ++iy) {
      for (std::int64_t ix = wx.begin; ix < wx.end; ++ix) sum += in[iy * width + ix];
    }
    const std::int64_t divisor =
        count_pad ? wy.padded * wx.padded : (wy.end - wy.begin) * (wx.end - wx.begin);
    return static_cast<float>(sum / static_cast<double>(divisor));
  });
}

}  // namespace kiln::reference
