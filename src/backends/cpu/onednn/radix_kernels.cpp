#include "backends/cpu/onednn/radix_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace kiln::onednn {
namespace {

// Below this many floats a parallel region costs more than it saves.
constexpr std::int64_t kParallelMinFloats = 1 << 15;

// Pointer to pixel 0 of channel block `block_index` of image n.
const float* block_at(const float* base, const ChannelBlocked& layout, std::int64_t n, std::int64_t block_index) {
  return base + n * layout.image_stride() + block_index * layout.pixels() * layout.block;
}

// One output block of the weighted sum: out[p, j] = sum_r in[r][p, j] * w[r][j]. B is a template
// parameter so the inner loop is a fixed-width vector operation.
template <int B>
void weighted_block(const float* const* in, const float* const* w, std::int64_t radix, std::int64_t pixels,
                    float* out) {
  for (std::int64_t p = 0; p < pixels; ++p) {
    float acc[B];
    for (int j = 0; j < B; ++j) acc[j] = in[0][p * B + j] * w[0][j];
    for (std::int64_t r = 1; r < radix; ++r) {
      for (int j = 0; j < B; ++j) acc[j] += in[r][p * B + j] * w[r][j];
    }
    for (int j = 0; j < B; ++j) out[p * B + j] = acc[j];
  }
}

template <int B>
void sum_mean_block(const float* const* in, std::int64_t radix, std::int64_t pixels, float* out) {
  float acc[B] = {};
  for (std::int64_t r = 0; r < radix; ++r) {
    for (std::int64_t p = 0; p < pixels; ++p) {
      for (int j = 0; j < B; ++j) acc[j] += in[r][p * B + j];
    }
  }
  const float scale = 1.0f / static_cast<float>(pixels);
  for (int j = 0; j < B; ++j) out[j] = acc[j] * scale;
}

}  // namespace

bool radix_layout_supported(const ChannelBlocked& x, std::int64_t radix) {
  return x.block >= 1 && radix >= 1 && radix <= kMaxRadix && x.channels % radix == 0 &&
         (x.channels / radix) % x.block == 0;
}

void radix_sum(const float* x, const ChannelBlocked& xl, std::int64_t radix, float* y) {
  const std::int64_t out_blocks = xl.channels / radix / xl.block;
  const std::int64_t run = xl.pixels() * xl.block;  // floats in one channel block
  const std::int64_t tasks = xl.batch * out_blocks;
#pragma omp parallel for if (tasks * run * radix >= kParallelMinFloats)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t n = t / out_blocks, b = t % out_blocks;
    float* out = y + (n * out_blocks + b) * run;
    std::memcpy(out, block_at(x, xl, n, b), static_cast<std::size_t>(run) * sizeof(float));
    for (std::int64_t r = 1; r < radix; ++r) {
      const float* in = block_at(x, xl, n, r * out_blocks + b);
      for (std::int64_t i = 0; i < run; ++i) out[i] += in[i];
    }
  }
}

void radix_sum_mean(const float* x, const ChannelBlocked& xl, std::int64_t radix, float* y,
                    std::int64_t y_stride) {
  const std::int64_t channels = xl.channels / radix;
  const std::int64_t out_blocks = channels / xl.block;
  const std::int64_t tasks = xl.batch * out_blocks;
#pragma omp parallel for if (tasks * xl.pixels() * xl.block * radix >= kParallelMinFloats)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t n = t / out_blocks, b = t % out_blocks;
    const float* in[kMaxRadix];
    for (std::int64_t r = 0; r < radix; ++r) in[r] = block_at(x, xl, n, r * out_blocks + b);
    float* out = y + n * y_stride + b * xl.block;
    switch (xl.block) {
      case 16: sum_mean_block<16>(in, radix, xl.pixels(), out); break;
      case 8: sum_mean_block<8>(in, radix, xl.pixels(), out); break;
      default: sum_mean_block<1>(in, radix, xl.pixels(), out); break;
    }
  }
  for (std::int64_t n = 0; n < xl.batch; ++n) {
    std::fill(y + n * y_stride + channels, y + (n + 1) * y_stride, 0.0f);
  }
}

void radix_weighted_sum(const float* x, const ChannelBlocked& xl, std::int64_t radix, const float* w,
                        std::int64_t w_stride, float* y) {
  const std::int64_t channels = xl.channels / radix;
  const std::int64_t out_blocks = channels / xl.block;
  const std::int64_t run = xl.pixels() * xl.block;
  const std::int64_t tasks = xl.batch * out_blocks;
#pragma omp parallel for if (tasks * run * radix >= kParallelMinFloats)
  for (std::int64_t t = 0; t < tasks; ++t) {
    const std::int64_t n = t / out_blocks, b = t % out_blocks;
    const float* in[kMaxRadix];
    const float* weights[kMaxRadix];
    for (std::int64_t r = 0; r < radix; ++r) {
      in[r] = block_at(x, xl, n, r * out_blocks + b);
      weights[r] = w + n * w_stride + r * channels + b * xl.block;
    }
    float* out = y + (n * out_blocks + b) * run;
    switch (xl.block) {
      case 16: weighted_block<16>(in, weights, radix, xl.pixels(), out); break;
      case 8: weighted_block<8>(in, weights, radix, xl.pixels(), out); break;
      default: weighted_block<1>(in, weights, radix, xl.pixels(), out); break;
    }
  }
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
