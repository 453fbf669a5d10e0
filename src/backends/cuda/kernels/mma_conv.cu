// The tensor-core convolution kernel (see mma_conv_kernels.h). The GEMM: rows are output pixels, columns
// output channels, and the reduction runs over (tap, input channel) in steps of 16, one input pixel's 16
// channels per step. A block of four warps copies its output channels' weights (in fragment order, so a
// lane reads its part of a step with one 8-byte load) to shared memory once; each warp then computes
// 16 x pixel_tiles output pixels by channel_tiles x 8 output channels. A lane reads its pixels' input values
// straight from global memory (32-bit loads; a 3x3 kernel reads each input pixel nine times, from L1/L2), and
// the epilogue writes its accumulators as half2 pairs where the layer's output lives.
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/mma_conv_kernels.h"

namespace kiln::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxSharedBytes = 48 * 1024;
constexpr int kFragmentBytes = 32 * 8;  // one step's weights for 8 output channels: 32 lanes x 4 halves

// d += a * b on one 16 x 8 x 16 tile (fp16 inputs, f32 accumulators), in mma.sync's fragment layout.
__device__ inline void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], uint2 b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b.x), "r"(b.y));
#endif
}

__device__ inline unsigned load_pair(const __half* p) { return __ldg(reinterpret_cast<const unsigned*>(p)); }

// One output pixel a lane accumulates: where its input window starts, or nothing past the last pixel.
struct PixelOrigin {
  int image_row;  // image * in_h
  int iy, ix;     // the window's top left corner (may lie in the padding)
  bool valid;
};

__device__ inline PixelOrigin origin_of(int pixel, const MmaConvShape& s) {
  const int total = s.n * s.out_h * s.out_w;
  const int p = min(pixel, total - 1);
  const int ox = p % s.out_w, oy = p / s.out_w % s.out_h, image = p / (s.out_w * s.out_h);
  return {image * s.in_h, oy * s.stride_h - s.pad_h, ox * s.stride_w - s.pad_w, pixel < total};
}

// A tap's input pixel for one of a lane's rows: where its channels start, and whether it lies inside the
// image. Outside (the padding, or a row past the last pixel) `at` is x itself and the value read is
// dropped: with a null pointer there and the load behind a null check, compute-sanitizer caught the
// kernel reading address 0.
struct TapPixel {
  const __half* at;
  bool inside;
};

// Lane `lane`'s A fragment of one step: rows g and g + 8 of a pixel tile, channels 2t, 2t + 1 and 2t + 8,
// 2t + 9 of the step's 16 (from `channel` on), where g = lane / 4 and t = lane % 4.
__device__ inline void load_a(const TapPixel& g, const TapPixel& g8, int channel, int lane,
                              unsigned (&a)[4]) {
  const int col = channel + (lane % 4) * 2;
  const unsigned v0 = load_pair(g.at + col), v1 = load_pair(g8.at + col);
  const unsigned v2 = load_pair(g.at + col + 8), v3 = load_pair(g8.at + col + 8);
  a[0] = g.inside ? v0 : 0u;
  a[1] = g8.inside ? v1 : 0u;
  a[2] = g.inside ? v2 : 0u;
  a[3] = g8.inside ? v3 : 0u;
}

// The products of one warp's pixel tiles (rows from `first_pixel` on) with the block's output channels.
template <int kKernel, int kPixelTiles, int kChannelTiles>
__device__ void accumulate(const __half* x, const uint2* b_frag, const MmaConvShape& s, int first_pixel,
                           int lane, float (&acc)[kPixelTiles][kChannelTiles][4]) {
  const int steps_per_tap = s.c / 16;
  PixelOrigin rows[kPixelTiles][2];
#pragma unroll
  for (int m = 0; m < kPixelTiles; ++m) {
    rows[m][0] = origin_of(first_pixel + m * 16 + lane / 4, s);
    rows[m][1] = origin_of(first_pixel + m * 16 + lane / 4 + 8, s);
  }
#pragma unroll
  for (int ky = 0; ky < kKernel; ++ky) {
#pragma unroll
    for (int kx = 0; kx < kKernel; ++kx) {
      // This tap's input pixel of each of the lane's rows.
      TapPixel at[kPixelTiles][2];
#pragma unroll
      for (int m = 0; m < kPixelTiles; ++m) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const PixelOrigin& o = rows[m][h];
          const int iy = o.iy + ky, ix = o.ix + kx;
          const bool inside = o.valid && iy >= 0 && iy < s.in_h && ix >= 0 && ix < s.in_w;
          const std::int64_t offset = (static_cast<std::int64_t>(o.image_row + iy) * s.in_w + ix) * s.x_pitch;
          at[m][h] = {x + (inside ? offset : 0), inside};
        }
      }
      const int tap_step = (ky * kKernel + kx) * steps_per_tap;
#pragma unroll 2
      for (int cs = 0; cs < steps_per_tap; ++cs) {
        unsigned a[kPixelTiles][4];
#pragma unroll
        for (int m = 0; m < kPixelTiles; ++m) load_a(at[m][0], at[m][1], cs * 16, lane, a[m]);
        const uint2* step_b = b_frag + (tap_step + cs) * kChannelTiles * 32 + lane;
#pragma unroll
        for (int n = 0; n < kChannelTiles; ++n) {
          const uint2 b = step_b[n * 32];
#pragma unroll
          for (int m = 0; m < kPixelTiles; ++m) mma_16x8x16(acc[m][n], a[m], b);
        }
      }
    }
  }
}

// y = act(acc + bias (+ residual)) for the warp's pixels and the block's channels (from `first_tile` x 8 on).
// Accumulator j of tile (m, n): pixel row lane / 4 (+ 8 for j >= 2), channel 2 (lane % 4) + j % 2.
template <int kPixelTiles, int kChannelTiles>
__device__ void write_tile(const float (&acc)[kPixelTiles][kChannelTiles][4], const __half* bias,
                           const __half* residual, __half* y, const MmaConvShape& s, Act act, int first_pixel,
                           int first_tile, int lane) {
  const int total = s.n * s.out_h * s.out_w;
#pragma unroll
  for (int n = 0; n < kChannelTiles; ++n) {
    const int channel = (first_tile + n) * 8 + (lane % 4) * 2;
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(bias + channel));
#pragma unroll
    for (int m = 0; m < kPixelTiles; ++m) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int pixel = first_pixel + m * 16 + lane / 4 + h * 8;
        if (pixel >= total) continue;
        float v0 = acc[m][n][2 * h] + b.x, v1 = acc[m][n][2 * h + 1] + b.y;
        if (residual != nullptr) {
          const float2 r = __half22float2(*reinterpret_cast<const __half2*>(
              residual + static_cast<std::int64_t>(pixel) * s.residual_pitch + channel));
          v0 += r.x, v1 += r.y;
        }
        *reinterpret_cast<__half2*>(y + static_cast<std::int64_t>(pixel) * s.y_pitch + channel) =
            __floats2half2_rn(activate(v0, act), activate(v1, act));
      }
    }
  }
}

// One block: 4 warps x 16 x kPixelTiles output pixels (blockIdx.x), kChannelTiles x 8 output channels
// (blockIdx.y).
template <int kKernel, int kPixelTiles, int kChannelTiles>
__global__ void __launch_bounds__(kWarps * 32)
    mma_conv_kernel(const __half* __restrict__ x, const uint4* __restrict__ fragments,
                    const __half* __restrict__ bias, const __half* __restrict__ residual,
                    __half* __restrict__ y, MmaConvShape s, Act act) {
  extern __shared__ uint4 weights[];  // [step][channel tile][lane] x 8 bytes
  const int steps = kKernel * kKernel * (s.c / 16);
  const int all_tiles = s.k / 8, first_tile = static_cast<int>(blockIdx.y) * kChannelTiles;
  // The block's weights: per step, kChannelTiles consecutive fragments of all_tiles (16 bytes a load).
  constexpr int kChunks = kChannelTiles * kFragmentBytes / 16;
  for (int i = static_cast<int>(threadIdx.x); i < steps * kChunks; i += kWarps * 32) {
    const int step = i / kChunks, within = i % kChunks;
    weights[i] =
        fragments[(static_cast<std::int64_t>(step) * all_tiles + first_tile) * (kFragmentBytes / 16) +
                  within];
  }
  // The weights are constants of the plan: copied before waiting for the kernel ahead (kernel_launch.cuh).
  start_after_previous_kernel();
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
  const int first_pixel = (static_cast<int>(blockIdx.x) * kWarps + warp) * kPixelTiles * 16;
  float acc[kPixelTiles][kChannelTiles][4] = {};
  accumulate<kKernel, kPixelTiles, kChannelTiles>(x, reinterpret_cast<const uint2*>(weights), s, first_pixel,
                                                  lane, acc);
  write_tile<kPixelTiles, kChannelTiles>(acc, bias, residual, y, s, act, first_pixel, first_tile, lane);
}

int shared_bytes(const MmaConvShape& s, const MmaConvVariant& v) {
  return s.kernel * s.kernel * (s.c / 16) * v.channel_tiles * kFragmentBytes;
}

template <int kKernel, int kPixelTiles, int kChannelTiles>
cudaError_t launch(const void* x, const void* fragments, const void* bias, const void* residual, void* y,
                   const MmaConvShape& s, Act act, cudaStream_t stream) {
  const int pixels = s.n * s.out_h * s.out_w, per_block = kWarps * kPixelTiles * 16;
  const dim3 grid(static_cast<unsigned>((pixels + per_block - 1) / per_block),
                  static_cast<unsigned>(s.k / 8 / kChannelTiles));
  return launch_early(mma_conv_kernel<kKernel, kPixelTiles, kChannelTiles>, grid, kWarps * 32,
                      static_cast<std::size_t>(shared_bytes(s, {kPixelTiles, kChannelTiles})), stream,
                      static_cast<const __half*>(x), static_cast<const uint4*>(fragments),
                      static_cast<const __half*>(bias), static_cast<const __half*>(residual),
                      static_cast<__half*>(y), s, act);
}

template <int kKernel, int kPixelTiles>
cudaError_t launch_tiles(const void* x, const void* fragments, const void* bias, const void* residual,
                         void* y, const MmaConvShape& s, int channel_tiles, Act act, cudaStream_t stream) {
  switch (channel_tiles) {
    case 1:
      return launch<kKernel, kPixelTiles, 1>(x, fragments, bias, residual, y, s, act, stream);
    case 2:
      return launch<kKernel, kPixelTiles, 2>(x, fragments, bias, residual, y, s, act, stream);
    case 4:
      return launch<kKernel, kPixelTiles, 4>(x, fragments, bias, residual, y, s, act, stream);
    default:
      return launch<kKernel, kPixelTiles, 8>(x, fragments, bias, residual, y, s, act, stream);
  }
}

template <int kKernel>
cudaError_t launch_kernel(const void* x, const void* fragments, const void* bias, const void* residual,
                          void* y, const MmaConvShape& s, const MmaConvVariant& v, Act act,
                          cudaStream_t stream) {
  return v.pixel_tiles == 1
             ? launch_tiles<kKernel, 1>(x, fragments, bias, residual, y, s, v.channel_tiles, act, stream)
             : launch_tiles<kKernel, 2>(x, fragments, bias, residual, y, s, v.channel_tiles, act, stream);
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; }

}  // namespace

bool mma_conv_takes(const MmaConvShape& s, const MmaConvVariant& v) {
  const bool variant =
      (v.pixel_tiles == 1 || v.pixel_tiles == 2) &&
      (v.channel_tiles == 1 || v.channel_tiles == 2 || v.channel_tiles == 4 || v.channel_tiles == 8);
  const bool pitches = s.x_pitch >= s.c && s.y_pitch >= s.k && s.residual_pitch >= s.k &&
                       s.x_pitch % 2 == 0 && s.y_pitch % 2 == 0 && s.residual_pitch % 2 == 0;
  const std::int64_t pixels = static_cast<std::int64_t>(s.n) * s.out_h * s.out_w;
  const std::int64_t inputs = static_cast<std::int64_t>(s.n) * s.in_h * s.in_w;
  return variant && pitches && (s.kernel == 1 || s.kernel == 3) && s.c >= 16 && s.c % 16 == 0 && s.k >= 8 &&
         s.k % (8 * v.channel_tiles) == 0 && s.stride_h >= 1 && s.stride_w >= 1 && s.n >= 1 && pixels >= 1 &&
         pixels < (std::int64_t{1} << 31) && inputs < (std::int64_t{1} << 31) &&
         shared_bytes(s, v) <= kMaxSharedBytes;
}

cudaError_t mma_conv(const void* x, const void* fragments, const void* bias, const void* residual, void* y,
                     const MmaConvShape& s, const MmaConvVariant& v, Act act, cudaStream_t stream) {
  if (!mma_conv_takes(s, v)) return cudaErrorInvalidConfiguration;
  if (!aligned(x) || !aligned(y) || !aligned(bias) || (residual != nullptr && !aligned(residual)) ||
      reinterpret_cast<std::uintptr_t>(fragments) % 16 != 0)
    return cudaErrorMisalignedAddress;
  return s.kernel == 1 ? launch_kernel<1>(x, fragments, bias, residual, y, s, v, act, stream)
                       : launch_kernel<3>(x, fragments, bias, residual, y, s, v, act, stream);
}

}  // namespace kiln::cuda
