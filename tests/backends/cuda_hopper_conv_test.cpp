// kiln's Hopper convolution kernel (kernels/hopper/gemm_conv_kernels.h) called directly, every
// tile, against a double-precision convolution of the same operand values: pointwise layers and windows
// (3x3 at strides 1 and 2, a strided 1x1, a 1x3 window with padding on one axis only, a 7x7 stem), fp16,
// E4M3 and int8 operands, pixel and channel counts that are no multiple of a tile's (partial tiles at every
// edge, a partial K block, a tap narrower than a K block), a residual, SiLU and ReLU, channel views
// (channels outside a view stay as they were), grouped layers (ResNeSt's radix convolutions: each group's
// own channels of x, taps padded to whole K blocks with zeros that cancel the next group's x),
// and E4M3 or int8 output codes, which must equal kiln's host quantization of the kernel's own fp16 output
// (and be the same bytes when no fp16 output is written). Skips without a Hopper GPU; what the kernel takes
// is checked on any machine.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "cuda_test_util.h"
#include "testing/random_tensor.h"

#if KILN_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/convolution/hopper_conv.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA

using cuda::hopper::GemmConvShape;
using cuda::hopper::GemmConvTile;
using cuda::hopper::Operand;

using cuda::hopper::GemmConvWindow;

struct HopperCase {
  Operand operand;
  int c, k, pixels;  // c: input channels a group; pixels: of x and y for a pointwise layer, else ignored
  bool residual, views, codes, y;
  cuda::Act act;
  GemmConvWindow window = {};   // out_height and out_width are derived
  bool residual_codes = false;  // the residual as codes with a scale (a quantized plan's residual stream)
  bool int8_codes = false;      // codes on int8's grid (int8 operands always write those)
  bool int8_residual = false;   // residual codes on int8's grid (int8 operands always read those)
  int groups = 1;               // k output channels in all, c input channels each group

  int bytes() const { return operand == Operand::kF16 ? 2 : 1; }
  int x_channels() const { return groups * c; }
  // The weights' channels a tap: a group's channels, zeros up to a multiple of 64 bytes (grouped layers).
  int tap_channels() const {
    const int row = 64 / bytes();
    return groups == 1 ? c : (c + row - 1) / row * row;
  }

  bool writes_int8_codes() const { return int8_codes || operand == Operand::kS8; }
  bool reads_int8_residual() const { return residual_codes && (int8_residual || operand == Operand::kS8); }

  GemmConvWindow output_window() const {
    GemmConvWindow w = window;
    if (w.batch == 0) return w;
    w.out_height = (w.height + 2 * w.pad_h - w.kernel_h) / w.stride_h + 1;
    w.out_width = (w.width + 2 * w.pad_w - w.kernel_w) / w.stride_w + 1;
    return w;
  }
  int in_pixels() const { return window.batch == 0 ? pixels : window.batch * window.height * window.width; }
  int out_pixels() const {
    const GemmConvWindow w = output_window();
    return w.batch == 0 ? pixels : w.batch * w.out_height * w.out_width;
  }
  int taps() const { return window.kernel_h * window.kernel_w; }
};

std::string case_name(const HopperCase& c) {
  const GemmConvWindow& w = c.window;
  return cat(c.operand == Operand::kF16    ? "f16"
             : c.operand == Operand::kE4m3 ? "e4m3"
                                           : "int8",
             "_c", c.c, "_k", c.k, "_px", c.in_pixels(),
             w.batch == 0
                 ? std::string()
                 : cat("_", w.kernel_h, "x", w.kernel_w, "_s", w.stride_h, "_p", w.pad_h, "x", w.pad_w),
             c.residual ? (c.reads_int8_residual() ? "_residual_int8"
                           : c.residual_codes      ? "_residual_codes"
                                                   : "_residual")
                        : "",
             c.groups > 1 ? cat("_g", c.groups) : std::string(), c.views ? "_views" : "",
             c.codes ? (c.writes_int8_codes() ? "_int8_codes" : "_codes") : "", c.y ? "" : "_no_y",
             c.act == cuda::Act::kSilu ? "_silu" : "_relu");
}

void PrintTo(const HopperCase& c, std::ostream* out) { *out << case_name(c); }

template <class T>
cuda::DeviceBuffer upload(const std::vector<T>& host) {
  cuda::DeviceBuffer buffer(host.size() * sizeof(T));
  cuda::check(cudaMemcpy(buffer.data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
              "upload");
  return buffer;
}

template <class T>
std::vector<T> download(const cuda::DeviceBuffer& buffer, std::size_t count) {
  std::vector<T> host(count);
  cuda::check(cudaMemcpy(host.data(), buffer.data(), count * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return host;
}

// Values of [rows, columns] with `pitch` elements per row; positions outside the columns hold `fill`.
std::vector<float> pitched(const Tensor& t, std::int64_t rows, std::int64_t columns, std::int64_t pitch,
                           std::int64_t offset, float fill) {
  std::vector<float> out(static_cast<std::size_t>(rows * pitch), fill);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < columns; ++c)
      out[static_cast<std::size_t>(r * pitch + offset + c)] =
          t.f32()[static_cast<std::size_t>(r * columns + c)];
  return out;
}

std::vector<std::uint16_t> to_f16_bits(const std::vector<float>& v) {
  std::vector<std::uint16_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_f16(v[i]);
  return out;
}

std::vector<std::uint8_t> to_e4m3_codes(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = f32_to_e4m3(v[i]);
  return out;
}

// int8 codes of values taken as codes already (scale 1), as bytes.
std::uint8_t int8_byte(float v, float inverse_scale = 1.0f) {
  return static_cast<std::uint8_t>(quantize_to_int8(v, inverse_scale));
}
std::vector<std::uint8_t> to_int8_codes(const std::vector<float>& v) {
  std::vector<std::uint8_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = int8_byte(v[i]);
  return out;
}

// The operand bytes the kernel reads: fp16 values, E4M3 or int8 codes.
std::vector<std::uint8_t> operand_bytes(const std::vector<float>& v, Operand operand) {
  if (operand == Operand::kE4m3) return to_e4m3_codes(v);
  if (operand == Operand::kS8) return to_int8_codes(v);
  const std::vector<std::uint16_t> bits = to_f16_bits(v);
  std::vector<std::uint8_t> out(bits.size() * 2);
  std::memcpy(out.data(), bits.data(), out.size());
  return out;
}

double activated(double v, cuda::Act act) {
  return act == cuda::Act::kRelu ? (v > 0 ? v : 0) : v / (1.0 + std::exp(-v));
}

// The case's convolution in double, [out_pixels, k], before the epilogue: x is [in_pixels, x_pitch] from
// channel x_at, w is [k, taps, c]; output channel o reads group o / (k / groups)'s c channels of x.
// `stored` rounds a value to the operand type.
template <class Stored>
std::vector<double> convolved(const HopperCase& c, const std::vector<float>& x, std::int64_t x_pitch,
                              std::int64_t x_at, const std::vector<float>& w, Stored stored) {
  const GemmConvWindow v =
      c.window.batch == 0 ? GemmConvWindow{c.pixels, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1} : c.output_window();
  std::vector<double> out(static_cast<std::size_t>(c.out_pixels()) * c.k, 0.0);
  for (int p = 0; p < c.out_pixels(); ++p) {
    const int n = p / (v.out_height * v.out_width), oh = p / v.out_width % v.out_height, ow = p % v.out_width;
    for (int tap = 0; tap < v.kernel_h * v.kernel_w; ++tap) {
      const int ih = oh * v.stride_h - v.pad_h + tap / v.kernel_w,
                iw = ow * v.stride_w - v.pad_w + tap % v.kernel_w;
      if (ih < 0 || ih >= v.height || iw < 0 || iw >= v.width) continue;
      const std::int64_t in = (static_cast<std::int64_t>(n) * v.height + ih) * v.width + iw;
      for (int o = 0; o < c.k; ++o) {
        const std::int64_t first = x_at + static_cast<std::int64_t>(o / (c.k / c.groups)) * c.c;
        double s = 0;
        for (int i = 0; i < c.c; ++i) {
          s += static_cast<double>(stored(x[static_cast<std::size_t>(in * x_pitch + first + i)])) *
               stored(w[(static_cast<std::size_t>(o) * v.kernel_h * v.kernel_w + tap) * c.c + i]);
        }
        out[static_cast<std::size_t>(p) * c.k + o] += s;
      }
    }
  }
  return out;
}

class CudaHopperConvKernelTest : public ::testing::TestWithParam<HopperCase> {};

TEST_P(CudaHopperConvKernelTest, EveryTileMatchesTheReference) {
  KILN_SKIP_WITHOUT_GPU();
  if (!cuda::hopper::hopper_gpu()) GTEST_SKIP() << "the kernel runs on compute capability 9.0 only";
  const HopperCase c = GetParam();
  const bool fp8 = c.operand == Operand::kE4m3, int8 = c.operand == Operand::kS8, scaled = fp8 || int8;
  // Operands as the kernel reads them: fp16 values, or E4M3 or int8 code values (the scales are the
  // epilogue's).
  const int pixels = c.out_pixels();
  const float x_range = fp8 ? 200.0f : int8 ? 127.0f : 1.0f, w_range = fp8 ? 100.0f : int8 ? 127.0f : 0.2f;
  const Tensor x_values = testing::random_tensor({c.in_pixels(), c.x_channels()}, 11, -x_range, x_range);
  const Tensor w_values = testing::random_tensor({c.k, c.taps() * c.c}, 12, -w_range, w_range);
  const Tensor bias = testing::random_tensor({c.k}, 13);
  const Tensor scale = testing::random_tensor({c.k}, 14, 1e-4f, 3e-4f);
  const Tensor residual = testing::random_tensor({pixels, c.k}, 15);
  const std::int64_t x_pitch = c.x_channels() + (c.views ? 32 : 0), x_at = c.views ? 16 : 0;
  const std::int64_t y_pitch = c.views ? c.k + 48 : c.k, y_at = c.views ? 16 : 0;
  const std::int64_t r_pitch = c.views ? c.k + (c.residual_codes ? 16 : 8) : c.k;
  // A residual of codes holds residual / r_scale in E4M3 or int8; the kernel adds half(code x r_scale).
  const float r_scale = 0.01f;
  const auto code_of = [&](float v) {
    return c.reads_int8_residual() ? static_cast<float>(quantize_to_int8(v, 1.0f))
                                   : e4m3_to_f32(f32_to_e4m3(v));
  };
  const auto residual_value = [&](std::size_t at) {
    const float v = residual.f32()[at];
    return c.residual_codes ? f16_to_f32(f32_to_f16(code_of(v / r_scale) * r_scale))
                            : f16_to_f32(f32_to_f16(v));
  };
  constexpr float kFill = 7.0f;
  const std::vector<float> x_host = pitched(x_values, c.in_pixels(), c.x_channels(), x_pitch, x_at, kFill);
  const std::vector<float> w_host(w_values.f32().begin(), w_values.f32().end());
  // As the kernel reads them: each tap's c channels, then zeros up to tap_channels().
  const std::vector<float> w_taps =
      pitched(w_values, static_cast<std::int64_t>(c.k) * c.taps(), c.c, c.tap_channels(), 0, 0.0f);
  // The values the kernel multiplies: operands rounded to their type once.
  const auto stored = [&](float v) {
    if (int8) return static_cast<float>(quantize_to_int8(v, 1.0f));
    return fp8 ? e4m3_to_f32(f32_to_e4m3(v)) : f16_to_f32(f32_to_f16(v));
  };
  std::vector<double> ref = convolved(c, x_host, x_pitch, x_at, w_host, stored);
  for (int p = 0; p < pixels; ++p) {
    for (int o = 0; o < c.k; ++o) {
      double& r = ref[static_cast<std::size_t>(p) * c.k + o];
      double v = r * (scaled ? scale.f32()[o] : 1.0f) + bias.f32()[o];
      if (c.residual) v += residual_value(static_cast<std::size_t>(p * c.k + o));
      r = activated(v, c.act);
    }
  }
  const cuda::DeviceBuffer dx = upload(operand_bytes(x_host, c.operand));
  const cuda::DeviceBuffer dw = upload(operand_bytes(w_taps, c.operand));
  const cuda::DeviceBuffer db = upload(std::vector<float>(bias.f32().begin(), bias.f32().end()));
  const cuda::DeviceBuffer ds = upload(std::vector<float>(scale.f32().begin(), scale.f32().end()));
  std::vector<float> residual_host = pitched(residual, pixels, c.k, r_pitch, 0, kFill);
  if (c.residual_codes) {
    for (float& v : residual_host) v /= r_scale;
  }
  const cuda::DeviceBuffer dr = c.reads_int8_residual() ? upload(to_int8_codes(residual_host))
                                : c.residual_codes      ? upload(to_e4m3_codes(residual_host))
                                                        : upload(to_f16_bits(residual_host));
  const std::size_t y_count = static_cast<std::size_t>(pixels) * y_pitch;
  const float code_scale = 0.05f;
  const GemmConvShape shape{pixels,
                            c.k,
                            c.c,
                            static_cast<int>(x_pitch),
                            static_cast<int>(y_pitch),
                            static_cast<int>(r_pitch),
                            c.output_window(),
                            c.groups,
                            c.tap_channels()};
  int tiles = 0, expected_tiles = 0;
  for (const GemmConvTile tile : cuda::hopper::kGemmConvTiles) {
    SCOPED_TRACE(cat("tile ", tile.columns, " columns x ", tile.consumers, " consumers x ", tile.blocks,
                     " blocks, ", tile.k_bytes, "-byte rows"));
    // A dense layer on every tile; a grouped one on tiles within a group whose K blocks fit a tap.
    const bool takes = c.groups == 1 || ((c.k / c.groups) % tile.columns == 0 &&
                                         (c.tap_channels() * c.bytes()) % tile.k_bytes == 0);
    expected_tiles += takes;
    ASSERT_EQ(cuda::hopper::gemm_conv_takes(shape, c.operand, tile, c.codes, c.residual_codes), takes);
    if (!takes) continue;
    const cuda::DeviceBuffer dy = upload(to_f16_bits(std::vector<float>(y_count, kFill)));
    const cuda::DeviceBuffer dc = upload(std::vector<std::uint8_t>(y_count, 0x7e));
    const auto* x = static_cast<const std::uint8_t*>(dx.data()) + x_at * (scaled ? 1 : 2);
    // Writes y (unless null) and the codes (unless null) of the tile's launch.
    const auto launch = [&](__half* y, std::uint8_t* codes) {
      cuda::hopper::GemmConvEpilogue e;
      e.scale = scaled ? static_cast<const float*>(ds.data()) : nullptr;
      e.bias = static_cast<const float*>(db.data());
      if (c.residual && c.residual_codes) {
        e.residual_codes = {static_cast<const std::uint8_t*>(dr.data()), r_scale};
        if (c.reads_int8_residual()) e.residual_grid = cuda::hopper::CodeGrid::kInt8;
      } else if (c.residual) {
        e.residual = static_cast<const __half*>(dr.data());
      }
      e.act = c.act;
      e.y = y != nullptr ? y + y_at : nullptr;
      if (codes != nullptr) e.codes = {codes + y_at, code_scale};
      if (c.writes_int8_codes()) e.codes.grid = cuda::hopper::CodeGrid::kInt8;
      cuda::check(cuda::hopper::gemm_conv(c.operand, x, dw.data(), shape, tile, e, nullptr),
                  "launching gemm_conv");
      cuda::check(cudaDeviceSynchronize(), "running gemm_conv");
    };
    launch(static_cast<__half*>(dy.data()), c.codes ? static_cast<std::uint8_t*>(dc.data()) : nullptr);
    const std::vector<std::uint16_t> y = download<std::uint16_t>(dy, y_count);
    const std::vector<std::uint8_t> codes = download<std::uint8_t>(dc, y_count);
    if (!c.y) {
      // With no fp16 output the codes are the same bytes (they come from the rounded value all the same).
      const cuda::DeviceBuffer only = upload(std::vector<std::uint8_t>(y_count, 0x7e));
      launch(nullptr, static_cast<std::uint8_t*>(only.data()));
      EXPECT_TRUE(download<std::uint8_t>(only, y_count) == codes) << "codes written without y differ";
    }
    double diff = 0, norm = 0;
    bool untouched = true, codes_match = true;
    for (std::int64_t p = 0; p < pixels; ++p) {
      for (std::int64_t ch = 0; ch < y_pitch; ++ch) {
        const std::size_t at = static_cast<std::size_t>(p * y_pitch + ch);
        const bool inside = ch >= y_at && ch < y_at + c.k;
        if (!inside) {
          untouched = untouched && f16_to_f32(y[at]) == kFill && codes[at] == 0x7e;
          continue;
        }
        const double r = ref[static_cast<std::size_t>(p * c.k + ch - y_at)];
        const double v = f16_to_f32(y[at]);
        diff += (v - r) * (v - r);
        norm += r * r;
        const float value = f16_to_f32(y[at]);
        const std::uint8_t expected =
            c.writes_int8_codes() ? int8_byte(value, 1.0f / code_scale) : f32_to_e4m3(value / code_scale);
        if (c.codes) codes_match = codes_match && codes[at] == expected;
      }
    }
    EXPECT_TRUE(untouched) << "a channel outside the output view was written";
    EXPECT_TRUE(codes_match) << "codes differ from kiln's host quantization";
    // One rounding of the output to fp16 (2^-11 relative at most) over f32 accumulation of exact products,
    // against double (int8: exact integer sums). E4M3 twice that: Hopper's FP8 matrix steps add with fewer
    // bits than f32, the error growing with the channel count (7.7e-4 at 2048 channels,
    // benchmarks/hopper_conv_bench.cu).
    EXPECT_LE(std::sqrt(diff / norm), fp8 ? 0x1p-9 : 0x1p-10);
    ++tiles;
  }
  EXPECT_EQ(tiles, expected_tiles);
  EXPECT_GE(tiles, 1);
}

INSTANTIATE_TEST_SUITE_P(
    ConvLayers, CudaHopperConvKernelTest,
    ::testing::Values(
        HopperCase{Operand::kF16, 64, 64, 1000, false, false, false, true, cuda::Act::kRelu},
        HopperCase{Operand::kF16, 200, 136, 777, true, false, false, true, cuda::Act::kRelu},
        HopperCase{Operand::kF16, 96, 80, 300, true, true, true, true, cuda::Act::kSilu},
        HopperCase{Operand::kE4m3, 256, 128, 1000, false, false, true, true, cuda::Act::kRelu},
        HopperCase{Operand::kE4m3, 48, 96, 513, true, true, false, true, cuda::Act::kSilu},
        HopperCase{Operand::kE4m3, 512, 272, 129, true, false, true, false, cuda::Act::kRelu},
        // Windows {batch, height, width, kernel, stride, padding} (the output size is derived).
        HopperCase{Operand::kF16,
                   64,
                   64,
                   0,
                   false,
                   true,
                   false,
                   true,
                   cuda::Act::kRelu,
                   {2, 14, 14, 3, 3, 1, 1, 1, 1, 0, 0}},
        HopperCase{Operand::kF16,
                   128,
                   136,
                   0,
                   true,
                   false,
                   false,
                   true,
                   cuda::Act::kSilu,
                   {3, 15, 15, 3, 3, 2, 2, 1, 1, 0, 0}},
        HopperCase{Operand::kE4m3,
                   48,
                   96,
                   0,
                   false,
                   false,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {2, 9, 13, 3, 3, 1, 1, 1, 1, 0, 0}},
        HopperCase{Operand::kF16,
                   64,
                   128,
                   0,
                   true,
                   false,
                   false,
                   true,
                   cuda::Act::kRelu,
                   {2, 10, 10, 1, 1, 2, 2, 0, 0, 0, 0}},
        HopperCase{Operand::kF16,
                   32,
                   64,
                   0,
                   false,
                   false,
                   false,
                   true,
                   cuda::Act::kRelu,
                   {1, 7, 11, 1, 3, 1, 1, 0, 1, 0, 0}},
        HopperCase{Operand::kE4m3,
                   16,
                   64,
                   0,
                   false,
                   false,
                   false,
                   true,
                   cuda::Act::kRelu,
                   {1, 32, 32, 7, 7, 2, 2, 3, 3, 0, 0}},
        // 64 E4M3 channels: one 64-byte row a tap (ResNet's first stage), with a residual and
        // codes, and as a 3x3 window over partial tiles.
        HopperCase{Operand::kE4m3, 64, 256, 700, true, false, true, true, cuda::Act::kRelu},
        HopperCase{Operand::kE4m3,
                   64,
                   64,
                   0,
                   false,
                   true,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {2, 13, 11, 3, 3, 1, 1, 1, 1, 0, 0}},
        HopperCase{Operand::kE4m3,
                   192,
                   64,
                   0,
                   false,
                   false,
                   false,
                   true,
                   cuda::Act::kSilu,
                   {1, 9, 9, 3, 3, 2, 2, 1, 1, 0, 0}},
        // The residual as E4M3 codes (an FP8 plan's residual stream): ResNet's first-stage
        // last 1x1 writing codes only, a partial chunk of columns, an fp16 layer on views.
        HopperCase{Operand::kE4m3, 64, 256, 700, true, false, true, false, cuda::Act::kRelu, {}, true},
        HopperCase{Operand::kE4m3, 512, 272, 129, true, false, true, true, cuda::Act::kRelu, {}, true},
        HopperCase{Operand::kF16, 96, 80, 300, true, true, true, true, cuda::Act::kSilu, {}, true},
        // int8 operands (exact integer sums, scaled like FP8) writing int8 codes, with an fp16
        // residual (int8 plans keep residuals in fp16), on views, through windows and 64-byte
        // rows; an fp16 layer writing int8 codes for an int8 reader.
        HopperCase{Operand::kS8, 256, 128, 1000, false, false, true, true, cuda::Act::kRelu},
        HopperCase{Operand::kS8, 48, 96, 513, true, true, true, false, cuda::Act::kSilu},
        HopperCase{Operand::kS8, 64, 256, 700, true, false, true, true, cuda::Act::kRelu},
        HopperCase{Operand::kS8,
                   64,
                   64,
                   0,
                   false,
                   true,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {2, 13, 11, 3, 3, 1, 1, 1, 1, 0, 0}},
        HopperCase{Operand::kS8,
                   128,
                   136,
                   0,
                   true,
                   false,
                   false,
                   true,
                   cuda::Act::kSilu,
                   {3, 15, 15, 3, 3, 2, 2, 1, 1, 0, 0}},
        HopperCase{Operand::kF16, 200, 144, 777, true, false, true, true, cuda::Act::kRelu, {}, false, true},
        // The residual as int8 codes (an int8 plan's residual stream): a first-stage last 1x1
        // writing codes only, on views with a partial chunk of columns, a strided window, and
        // an fp16 layer the precision tactic kept reading them.
        HopperCase{Operand::kS8, 64, 256, 700, true, false, true, false, cuda::Act::kRelu, {}, true},
        HopperCase{Operand::kS8, 48, 96, 513, true, true, true, true, cuda::Act::kRelu, {}, true},
        HopperCase{Operand::kS8,
                   128,
                   144,
                   0,
                   true,
                   false,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {3, 15, 15, 3, 3, 2, 2, 1, 1, 0, 0},
                   true},
        HopperCase{
            Operand::kF16, 96, 80, 300, true, true, true, true, cuda::Act::kRelu, {}, true, true, true},
        // Grouped layers: ResNeSt's first-stage radix convolution (2 groups of 32 channels in and 64 out;
        // as 8-bit codes a 32-byte tap, padded to 64 bytes) in each operand type, a strided one with
        // 128-byte taps on views, one writing codes with a residual, and a grouped pointwise layer of
        // four 48-channel groups (padded) over partial pixel tiles.
        HopperCase{Operand::kS8,
                   32,
                   128,
                   0,
                   false,
                   false,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {2, 9, 11, 3, 3, 1, 1, 1, 1, 0, 0},
                   false,
                   false,
                   false,
                   2},
        HopperCase{Operand::kE4m3,
                   32,
                   128,
                   0,
                   false,
                   false,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {2, 9, 11, 3, 3, 1, 1, 1, 1, 0, 0},
                   false,
                   false,
                   false,
                   2},
        HopperCase{Operand::kF16,
                   32,
                   128,
                   0,
                   false,
                   false,
                   false,
                   true,
                   cuda::Act::kRelu,
                   {2, 9, 11, 3, 3, 1, 1, 1, 1, 0, 0},
                   false,
                   false,
                   false,
                   2},
        HopperCase{Operand::kS8,
                   128,
                   256,
                   0,
                   false,
                   true,
                   true,
                   false,
                   cuda::Act::kRelu,
                   {3, 15, 15, 3, 3, 2, 2, 1, 1, 0, 0},
                   false,
                   false,
                   false,
                   2},
        HopperCase{Operand::kF16,
                   64,
                   256,
                   0,
                   true,
                   true,
                   true,
                   true,
                   cuda::Act::kSilu,
                   {2, 10, 10, 3, 3, 1, 1, 1, 1, 0, 0},
                   false,
                   true,
                   false,
                   2},
        HopperCase{Operand::kS8,
                   48,
                   256,
                   777,
                   true,
                   false,
                   true,
                   true,
                   cuda::Act::kRelu,
                   {},
                   true,
                   false,
                   false,
                   4}),
    [](const auto& param_info) { return case_name(param_info.param); });

// The tactic layer as a program uses it: a convolution's geometry with channel views, its candidates
// offered to a race, the winner enqueued; fp16 against the double reference within 2^-10 as above.
TEST(CudaHopperConvTest, TheTacticLayerRunsAViewedConvolution) {
  KILN_SKIP_WITHOUT_GPU();
  if (!cuda::hopper::hopper_gpu()) GTEST_SKIP() << "the kernel runs on compute capability 9.0 only";
  cuda::ConvGeometry g;
  g.n = 2, g.c = 64, g.h = 9, g.w = 11, g.k = 48, g.out_h = 9, g.out_w = 11;
  g.x_pitch = 96, g.y_pitch = 64, g.residual_pitch = 48;
  const int pixels = g.n * g.h * g.w;
  const Tensor x = testing::random_tensor({pixels, g.c}, 21);
  const Tensor w = testing::random_tensor({g.k, g.c}, 22, -0.2f, 0.2f);
  const Tensor bias = testing::random_tensor({g.k}, 23);
  const Tensor residual = testing::random_tensor({pixels, g.k}, 24);
  constexpr float kFill = -3.0f;
  const std::vector<float> x_host = pitched(x, pixels, g.c, g.x_pitch, 32, kFill);
  const cuda::DeviceBuffer dx = upload(to_f16_bits(x_host));
  const cuda::DeviceBuffer dw = upload(to_f16_bits(std::vector<float>(w.f32().begin(), w.f32().end())));
  const cuda::DeviceBuffer db = upload(std::vector<float>(bias.f32().begin(), bias.f32().end()));
  const cuda::DeviceBuffer dr =
      upload(to_f16_bits(std::vector<float>(residual.f32().begin(), residual.f32().end())));
  const cuda::DeviceBuffer dy =
      upload(to_f16_bits(std::vector<float>(static_cast<std::size_t>(pixels) * g.y_pitch, kFill)));
  cuda::ConvBuffers b;
  b.x = static_cast<const std::uint16_t*>(dx.data()) + 32;
  b.weight = dw.data();
  b.bias = db.data();
  b.residual = dr.data();
  b.y = static_cast<std::uint16_t*>(dy.data()) + 16;
  ASSERT_TRUE(cuda::KilnHopperConv::takes(g, Operand::kF16, b));
  cuda::KilnHopperConv layer(g, Operand::kF16, cuda::Act::kRelu, b, cuda::current_device_name());
  cuda::TacticRace<cuda::KilnHopperConv::Tactic> race(false, nullptr);
  layer.offer_candidates(race, b, nullptr, 0);
  ASSERT_TRUE(race.winner().has_value());
  layer.use(*race.winner());
  layer.enqueue(b, nullptr, nullptr);
  cuda::check(cudaDeviceSynchronize(), "running the Hopper convolution");
  const std::vector<std::uint16_t> y =
      download<std::uint16_t>(dy, static_cast<std::size_t>(pixels) * g.y_pitch);
  double diff = 0, norm = 0;
  bool untouched = true;
  for (int p = 0; p < pixels; ++p) {
    for (int ch = 0; ch < g.y_pitch; ++ch) {
      const float v = f16_to_f32(y[static_cast<std::size_t>(p * g.y_pitch + ch)]);
      if (ch < 16 || ch >= 16 + g.k) {
        untouched = untouched && v == kFill;
        continue;
      }
      const int o = ch - 16;
      double s =
          bias.f32()[o] + f16_to_f32(f32_to_f16(residual.f32()[static_cast<std::size_t>(p * g.k + o)]));
      for (int i = 0; i < g.c; ++i)
        s += static_cast<double>(f16_to_f32(f32_to_f16(x.f32()[static_cast<std::size_t>(p * g.c + i)]))) *
             f16_to_f32(f32_to_f16(w.f32()[static_cast<std::size_t>(o * g.c + i)]));
      const double r = s > 0 ? s : 0;
      diff += (v - r) * (v - r);
      norm += r * r;
    }
  }
  EXPECT_TRUE(untouched) << "a channel outside the output view was written";
  EXPECT_LE(std::sqrt(diff / norm), 0x1p-10);
}

TEST(CudaHopperConvTest, TakesRowsTheCopyEngineCanRead) {
  const GemmConvTile tile{128, 2};
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes({1000, 64, 64, 64, 64, 0, {}}, Operand::kF16, tile));
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes({1000, 64, 48, 48, 64, 64, {}}, Operand::kE4m3, tile));
  // fp16 rows of 4 channels are 8 bytes: the copy engine wants 16-byte multiples.
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({1000, 64, 4, 4, 64, 0, {}}, Operand::kF16, tile));
  // 24 E4M3 channels: 24 bytes.
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({1000, 64, 24, 24, 64, 0, {}}, Operand::kE4m3, tile));
  // Codes are stored in rows of 16-byte multiples too: 72 channels take fp16 values only.
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes({1000, 72, 64, 64, 72, 0, {}}, Operand::kF16, tile, false));
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({1000, 72, 64, 64, 72, 0, {}}, Operand::kF16, tile, true));
  // A residual of codes needs 16-byte rows as codes written do; an fp16 one 16-byte rows of values.
  EXPECT_TRUE(
      cuda::hopper::gemm_conv_takes({1000, 72, 64, 64, 72, 72, {}}, Operand::kF16, tile, false, false));
  EXPECT_FALSE(
      cuda::hopper::gemm_conv_takes({1000, 72, 64, 64, 72, 72, {}}, Operand::kF16, tile, false, true));
  EXPECT_TRUE(
      cuda::hopper::gemm_conv_takes({1000, 72, 64, 64, 72, 80, {}}, Operand::kF16, tile, false, true));
  // Windows: a 3x3 at stride 2 over 56 x 56 gives 28 x 28; padding as wide as the kernel, or an output
  // size that does not follow, is refused.
  const GemmConvWindow s2{1, 56, 56, 3, 3, 2, 2, 1, 1, 28, 28};
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes({784, 64, 64, 64, 64, 0, s2}, Operand::kF16, tile));
  GemmConvWindow wide = s2;
  wide.pad_h = wide.pad_w = 3;
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({784, 64, 64, 64, 64, 0, wide}, Operand::kF16, tile));
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({900, 64, 64, 64, 64, 0, s2}, Operand::kF16, tile));
  // A pitch narrower than the channels, an odd output channel count, an unknown tile.
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({1000, 64, 64, 32, 64, 0, {}}, Operand::kF16, tile));
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({1000, 63, 64, 64, 63, 0, {}}, Operand::kF16, tile));
  EXPECT_FALSE(
      cuda::hopper::gemm_conv_takes({1000, 64, 64, 64, 64, 0, {}}, Operand::kF16, GemmConvTile{96, 2}));
  // Two blocks a multiprocessor only for one consumer and at most 128 columns.
  EXPECT_TRUE(
      cuda::hopper::gemm_conv_takes({1000, 64, 64, 64, 64, 0, {}}, Operand::kF16, GemmConvTile{128, 1, 2}));
  EXPECT_FALSE(
      cuda::hopper::gemm_conv_takes({1000, 64, 64, 64, 64, 0, {}}, Operand::kF16, GemmConvTile{256, 1, 2}));
  EXPECT_FALSE(
      cuda::hopper::gemm_conv_takes({1000, 64, 64, 64, 64, 0, {}}, Operand::kF16, GemmConvTile{128, 2, 2}));
}

// A grouped layer: no tile spans two groups' output channels, no K block two taps of the weights, and x
// holds every group's channels.
TEST(CudaHopperConvTest, TakesGroupsTileByTile) {
  const GemmConvWindow w3{1, 14, 14, 3, 3, 1, 1, 1, 1, 14, 14};
  const GemmConvTile narrow64{64, 2, 1, cuda::hopper::kNarrowRowBytes}, wide64{64, 2, 1}, wide128{128, 2, 1};
  // Two groups of 32 int8 channels in, 64 out: taps padded to 64 bytes, 64-column tiles of 64-byte rows.
  EXPECT_EQ(cuda::hopper::grouped_weight_tap_channels(32, 2, 1), 64);
  const GemmConvShape radix{196, 128, 32, 64, 128, 0, w3, 2, 64};
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes(radix, Operand::kS8, narrow64));
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes(radix, Operand::kS8, wide64));   // a K block past the tap
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes(radix, Operand::kS8, wide128));  // a tile over both groups
  GemmConvShape unpadded = radix;
  unpadded.weight_tap_channels = 0;  // 32 channels a tap: a 64-byte K block would read the next tap
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes(unpadded, Operand::kS8, narrow64));
  GemmConvShape narrow_x = radix;
  narrow_x.x_pitch = 32;  // x must hold both groups' channels
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes(narrow_x, Operand::kS8, narrow64));
  // 64 fp16 channels a group are 128 bytes a tap: no padding, rows of either width.
  EXPECT_EQ(cuda::hopper::grouped_weight_tap_channels(64, 2, 2), 64);
  const GemmConvShape f16{196, 256, 64, 128, 256, 0, w3, 2, 64};
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes(f16, Operand::kF16, wide128));
  EXPECT_TRUE(cuda::hopper::gemm_conv_takes(f16, Operand::kF16, narrow64));
  // A dense layer's taps are its channels.
  EXPECT_EQ(cuda::hopper::grouped_weight_tap_channels(32, 1, 1), 32);
  EXPECT_FALSE(cuda::hopper::gemm_conv_takes({196, 64, 64, 64, 64, 0, w3, 1, 128}, Operand::kF16, wide64));
}

// A tactic record names its tile by one number; the numbers of tiles recorded before there were two-block
// tiles (columns x 10 + consumers) still name the same one-block tiles.
TEST(CudaHopperConvTest, TileNumbersNameOneTileEach) {
  std::set<int> numbers;
  for (const GemmConvTile& t : cuda::hopper::kGemmConvTiles) {
    const GemmConvTile back = cuda::hopper::tile_from_number(cuda::hopper::tile_number(t));
    EXPECT_EQ(back.columns, t.columns);
    EXPECT_EQ(back.consumers, t.consumers);
    EXPECT_EQ(back.blocks, t.blocks);
    EXPECT_EQ(back.k_bytes, t.k_bytes);
    numbers.insert(cuda::hopper::tile_number(t));
  }
  EXPECT_EQ(numbers.size(), std::size(cuda::hopper::kGemmConvTiles));
  const GemmConvTile recorded = cuda::hopper::tile_from_number(1282);
  EXPECT_EQ(recorded.columns, 128);
  EXPECT_EQ(recorded.consumers, 2);
  EXPECT_EQ(recorded.blocks, 1);
  EXPECT_EQ(recorded.k_bytes, 128);
  const GemmConvTile narrow = cuda::hopper::tile_from_number(cuda::hopper::tile_number({64, 1, 2, 64}));
  EXPECT_EQ(narrow.columns, 64);
  EXPECT_EQ(narrow.consumers, 1);
  EXPECT_EQ(narrow.blocks, 2);
  EXPECT_EQ(narrow.k_bytes, 64);
}

// Narrow-row tiles are timed only where a 128-byte row of K would carry zeros.
TEST(CudaHopperConvTest, NarrowRowsOnlyWhereWideRowsCarryZeros) {
  EXPECT_TRUE(cuda::hopper::rows_carry_zeros(64));     // 64 E4M3 channels
  EXPECT_TRUE(cuda::hopper::rows_carry_zeros(192));    // 96 fp16 channels
  EXPECT_FALSE(cuda::hopper::rows_carry_zeros(128));   // 64 fp16 channels
  EXPECT_FALSE(cuda::hopper::rows_carry_zeros(1024));  // 1024 E4M3 channels
}

#else

TEST(CudaHopperConvTest, SkipsWithoutCuda) {
  GTEST_SKIP() << "the CUDA backend is not built (KILN_CUDA is off)";
}

#endif

}  // namespace
}  // namespace kiln
