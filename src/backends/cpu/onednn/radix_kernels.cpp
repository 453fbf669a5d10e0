#include "backends/cpu/onednn/radix_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cpu/onednn/parallel_for.h"
#include "backends/cpu/onednn/precision.h"

namespace kiln::onednn {
namespace {

using Kind = ChannelLayout::Kind;

// Below this many floats read, a parallel region costs more than it saves.
constexpr std::int64_t kParallelMinFloats = 1 << 14;
// Channels one task of the channels-last mean reduces (a few cache lines per pixel).
constexpr std::int64_t kMeanChunk = 64;

// bf16 elements: the upper half of an f32.
using Bf16 = std::uint16_t;

inline float load(const float* p) { return *p; }
inline float load(const Bf16* p) { return std::bit_cast<float>(static_cast<std::uint32_t>(*p) << 16); }

inline void store(float* p, float value) { *p = value; }
inline void store(Bf16* p, float value) { *p = bf16_bits(value); }

// out[i] = sum_r in[r][i] * w[r][i % period] over `length` floats; w == nullptr means weights of 1.
// The period is the run of channels the weights repeat over (the block, or C in NHWC).
template <class In>
void combine_into(const In* const* in, const float* const* w, std::int64_t radix, std::int64_t length,
                  std::int64_t period, float* out) {
  if (period == 1) {  // NCHW: one weight per split for the whole run
    for (std::int64_t j = 0; j < length; ++j) out[j] = w != nullptr ? load(in[0] + j) * w[0][0] : load(in[0] + j);
    for (std::int64_t r = 1; r < radix; ++r) {
      const float scale = w != nullptr ? w[r][0] : 1.0f;
      for (std::int64_t j = 0; j < length; ++j) out[j] += load(in[r] + j) * scale;
    }
    return;
  }
  for (std::int64_t start = 0; start < length; start += period) {
    const std::int64_t n = std::min(period, length - start);
    if (w == nullptr) {
      for (std::int64_t j = 0; j < n; ++j) out[start + j] = load(in[0] + start + j);
      for (std::int64_t r = 1; r < radix; ++r) {
        for (std::int64_t j = 0; j < n; ++j) out[start + j] += load(in[r] + start + j);
      }
    } else {
      for (std::int64_t j = 0; j < n; ++j) out[start + j] = load(in[0] + start + j) * w[0][j];
      for (std::int64_t r = 1; r < radix; ++r) {
        for (std::int64_t j = 0; j < n; ++j) out[start + j] += load(in[r] + start + j) * w[r][j];
      }
    }
  }
}

// Floats a bf16 result is summed in before it is rounded: f32 partial sums on the stack, a multiple of
// every channel block.
constexpr std::int64_t kCombineChunk = 256;

// combine_into() for f32 and bf16 outputs. A bf16 output is summed chunk by chunk: a call covers either
// one period (its weights then start where the chunk starts) or whole blocks, which a chunk holds whole.
template <class In, class Out>
void combine(const In* const* in, const float* const* w, std::int64_t radix, std::int64_t length,
             std::int64_t period, Out* out) {
  if constexpr (std::is_same_v<Out, float>) {
    combine_into(in, w, radix, length, period, out);
  } else {
    float acc[kCombineChunk];
    const In* part[kMaxRadix];
    const float* weights[kMaxRadix];
    const bool one_period = period == length && period > 1;
    for (std::int64_t start = 0; start < length; start += kCombineChunk) {
      const std::int64_t n = std::min(kCombineChunk, length - start);
      for (std::int64_t r = 0; r < radix; ++r) {
        part[r] = in[r] + start;
        weights[r] = w != nullptr ? w[r] + (one_period ? start : 0) : nullptr;
      }
      combine_into(part, w != nullptr ? weights : nullptr, radix, n, one_period ? n : period, acc);
      for (std::int64_t j = 0; j < n; ++j) store(out + start + j, acc[j]);
    }
  }
}

// The shared walk of radix_sum and radix_weighted_sum. Blocked input: one task per (image, block of
// output channels), whose pixels are one contiguous run when y has x's layout, or runs of one block per
// pixel when y is NHWC (the reorder to NHWC comes free). NHWC input: one task per (image, pixel row).
template <class In, class Out>
void radix_combine(const In* x, const ChannelLayout& xl, std::int64_t radix, const float* w,
                   std::int64_t w_stride, Out* y, const ChannelLayout& yl) {
  const std::int64_t channels = xl.channels / radix;  // per split
  const std::int64_t pixels = xl.pixels();
  const bool weighted = w != nullptr;
  if (xl.kind == Kind::kChannelsLast) {
    const std::int64_t tasks = xl.batch * xl.height;
    parallel_for(tasks, xl.batch * xl.image_stride >= kParallelMinFloats, [&](std::int64_t t) {
      const std::int64_t n = t / xl.height, row = t % xl.height;
      const float* weights[kMaxRadix];
      for (std::int64_t r = 0; r < radix; ++r)
        weights[r] = weighted ? w + n * w_stride + r * channels : nullptr;
      for (std::int64_t p = row * xl.width; p < (row + 1) * xl.width; ++p) {
        const In* in[kMaxRadix];
        for (std::int64_t r = 0; r < radix; ++r)
          in[r] = x + n * xl.image_stride + p * xl.pixel_stride + r * channels;
        combine(in, weighted ? weights : nullptr, radix, channels, channels,
                y + n * yl.image_stride + p * yl.pixel_stride);
      }
    });
    return;
  }
  const std::int64_t out_blocks = channels / xl.block;
  const bool same_layout = yl.kind == Kind::kBlocked;
  const std::int64_t tasks = xl.batch * out_blocks;
  parallel_for(tasks, xl.batch * xl.image_stride >= kParallelMinFloats, [&](std::int64_t t) {
    const std::int64_t n = t / out_blocks, b = t % out_blocks;
    const In* in[kMaxRadix];
    const float* weights[kMaxRadix];
    for (std::int64_t r = 0; r < radix; ++r) {
      in[r] = x + n * xl.image_stride + (r * out_blocks + b) * xl.block_stride;
      weights[r] = weighted ? w + n * w_stride + r * channels + b * xl.block : nullptr;
    }
    if (same_layout) {
      combine(in, weighted ? weights : nullptr, radix, pixels * xl.block, xl.block,
              y + n * yl.image_stride + b * yl.block_stride);
      return;
    }
    Out* out = y + n * yl.image_stride + b * xl.block;
    for (std::int64_t p = 0; p < pixels; ++p) {
      combine(in, weighted ? weights : nullptr, radix, xl.block, xl.block, out + p * yl.pixel_stride);
      for (std::int64_t r = 0; r < radix; ++r) in[r] += xl.block;
    }
  });
}

// Calls kernel(in, out) with x's and y's elements typed as they are stored.
template <class Kernel>
void with_element_types(RadixInput x, RadixOutput y, Kernel&& kernel) {
  const auto to = [&](const auto* in) {
    if (y.bf16) return kernel(in, static_cast<Bf16*>(y.data));
    kernel(in, static_cast<float*>(y.data));
  };
  if (x.bf16) return to(static_cast<const Bf16*>(x.data));
  to(static_cast<const float*>(x.data));
}

template <class In, class Out>
void radix_sum_mean_of(const In* x, const ChannelLayout& xl, std::int64_t radix, Out* y, std::int64_t y_stride) {
  const std::int64_t channels = xl.channels / radix;
  const std::int64_t pixels = xl.pixels();
  const float scale = 1.0f / static_cast<float>(pixels);
  // Blocked: a task sums one block of channels; NHWC: a chunk of channels across all pixels.
  const bool last = xl.kind == Kind::kChannelsLast;
  const std::int64_t width = last ? kMeanChunk : xl.block;
  const std::int64_t chunks = (channels + width - 1) / width;
  const std::int64_t tasks = xl.batch * chunks;
  parallel_for(tasks, xl.batch * xl.image_stride >= kParallelMinFloats, [&](std::int64_t t) {
    const std::int64_t n = t / chunks, first = t % chunks * width;
    const std::int64_t count = std::min(width, channels - first);
    float acc[kMeanChunk > 16 ? kMeanChunk : 16] = {};
    for (std::int64_t r = 0; r < radix; ++r) {
      const In* in = x + n * xl.image_stride +
                     (last ? r * channels + first : (r * channels + first) / xl.block * xl.block_stride);
      for (std::int64_t p = 0; p < pixels; ++p) {
        for (std::int64_t j = 0; j < count; ++j) acc[j] += load(in + p * xl.pixel_stride + j);
      }
    }
    for (std::int64_t j = 0; j < count; ++j) store(y + n * y_stride + first + j, acc[j] * scale);
  });
  for (std::int64_t n = 0; n < xl.batch; ++n)
    std::fill(y + n * y_stride + channels, y + (n + 1) * y_stride, Out{0});
}

}  // namespace

bool radix_layout_supported(const ChannelLayout& x, std::int64_t radix) {
  if (radix < 1 || radix > kMaxRadix || x.channels % radix != 0) return false;
  switch (x.kind) {
    case Kind::kBlocked:
      return (x.channels / radix) % x.block == 0;
    case Kind::kChannelsLast:
      return true;
    case Kind::kNone:
      return false;
  }
  return false;
}

bool radix_output_supported(const ChannelLayout& x, const ChannelLayout& y) {
  switch (y.kind) {
    case Kind::kBlocked:
      return x.kind == Kind::kBlocked && y.block == x.block;
    case Kind::kChannelsLast:
      return x.kind != Kind::kNone;
    case Kind::kNone:
      return false;
  }
  return false;
}

void radix_sum(RadixInput x, const ChannelLayout& xl, std::int64_t radix, RadixOutput y, const ChannelLayout& yl) {
  with_element_types(x, y, [&](const auto* in, auto* out) { radix_combine(in, xl, radix, nullptr, 0, out, yl); });
}

void radix_weighted_sum(RadixInput x, const ChannelLayout& xl, std::int64_t radix, const float* w,
                        std::int64_t w_stride, RadixOutput y, const ChannelLayout& yl) {
  with_element_types(x, y, [&](const auto* in, auto* out) { radix_combine(in, xl, radix, w, w_stride, out, yl); });
}

void radix_sum_mean(RadixInput x, const ChannelLayout& xl, std::int64_t radix, RadixOutput y, std::int64_t y_stride) {
  with_element_types(x, y, [&](const auto* in, auto* out) { radix_sum_mean_of(in, xl, radix, out, y_stride); });
}

void radix_softmax(const float* logits, std::int64_t in_stride, std::int64_t batch, std::int64_t total,
                   std::int64_t radix, std::int64_t cardinality, float* out, std::int64_t out_stride) {
  for (std::int64_t n = 0; n < batch; ++n) {
    const float* in = logits + n * in_stride;
    float* o = out + n * out_stride;
    std::fill(o + total, o + out_stride, 0.0f);
    if (radix == 1) {
      for (std::int64_t i = 0; i < total; ++i) o[i] = 1.0f / (1.0f + std::exp(-in[i]));
      continue;
    }
    const std::int64_t per_group = total / (radix * cardinality);
    float e[kMaxRadix];
    for (std::int64_t g = 0; g < cardinality; ++g) {
      for (std::int64_t p = 0; p < per_group; ++p) {
        float peak = -std::numeric_limits<float>::infinity();
        for (std::int64_t r = 0; r < radix; ++r) peak = std::max(peak, in[(g * radix + r) * per_group + p]);
        float sum = 0.0f;
        for (std::int64_t r = 0; r < radix; ++r) {
          e[r] = std::exp(in[(g * radix + r) * per_group + p] - peak);  // shifted: exp cannot overflow
          sum += e[r];
        }
        for (std::int64_t r = 0; r < radix; ++r) o[(r * cardinality + g) * per_group + p] = e[r] / sum;
      }
    }
  }
}

}  // namespace kiln::onednn
