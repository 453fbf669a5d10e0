// excite_scale (see squeeze_excite_kernels.h; squeeze_pool is the global pool's kernel in pooling.cu). A
// block scales a tile of channels over a run of one image's pixels; it first computes the gate of its
// channels itself (a warp per eight channels, fc2's rows against the hidden vector), so the gate never goes
// through memory. Blocks of other pixel runs compute the same gate again: a tile's rows are at most 64 x 1024
// weights read from L2, against the launch and the round trip a gate step of its own costs.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/squeeze_excite_kernels.h"
#include "backends/cuda/kernels/warp_dots.cuh"

namespace kiln::cuda {
namespace {

constexpr int kTileChannels = 64;
constexpr int kRows = kTileChannels / (kBlock / 32);  // gate values a warp computes at once: one round
constexpr int kMaxChannels = 4096, kMaxHidden = 1024;
constexpr int kWantedBlocks = 6 * 132;  // two waves of three blocks per multiprocessor of a 132-SM Hopper
constexpr int kPacksAtOnce = 4;         // packs a thread scales per pass

// Loads (then scales and stores) up to kPacksAtOnce packs of the block's pixel run: pack i0 + j * kBlock.
// The packs wait in their storage type (half the registers of f32 for fp16), which with the launch bound
// below (80 registers) lets three blocks share a multiprocessor: at 128 registers a thread, two did, and
// the large excites moved a fraction of the memory's bandwidth (Nsight Compute).
template <typename T, int V>
struct ScalePass {
  alignas(16) T v[kPacksAtOnce][V];

  // Where pack i of the run lives (recomputed rather than held: registers are what limit occupancy).
  struct Place {
    std::int64_t offset;
    int channel;
  };
  __device__ static Place place(std::int64_t i, int packs, std::int64_t base, std::int64_t first_pixel,
                                int channels) {
    const int channel = static_cast<int>(i % packs) * V;
    return {base + (first_pixel + i / packs) * channels + channel, channel};
  }

  __device__ void load_from(const T* x, std::int64_t i0, std::int64_t items, int packs, std::int64_t base,
                            std::int64_t first_pixel, int channels) {
#pragma unroll
    for (int j = 0; j < kPacksAtOnce; ++j) {
      const std::int64_t i = min(i0 + j * kBlock, items - 1);  // past the end: the last pack again
      load_raw<T, V>(x + place(i, packs, base, first_pixel, channels).offset, v[j]);
    }
  }

  __device__ void scale_into(T* y, std::int64_t i0, std::int64_t items, int packs, std::int64_t base,
                             std::int64_t first_pixel, int channels, const float* gate) {
#pragma unroll
    for (int j = 0; j < kPacksAtOnce; ++j) {
      if (i0 + j * kBlock >= items) break;
      const Place at = place(i0 + j * kBlock, packs, base, first_pixel, channels);
      float scaled[V];
#pragma unroll
      for (int k = 0; k < V; ++k) scaled[k] = to_float(v[j][k]) * gate[at.channel + k];
      store<T, V>(y + at.offset, scaled);
    }
  }
};

template <typename T, int V>
__global__ void __launch_bounds__(kBlock, 3) excite_scale_kernel(const T* x, ExciteArgs a, T* y, int channels,
                                                                 std::int64_t pixels, int pixels_per_block) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  __shared__ float hidden[kMaxHidden];
  __shared__ float gate[kTileChannels];
  const int t = static_cast<int>(threadIdx.x), image = static_cast<int>(blockIdx.z);
  const int first = static_cast<int>(blockIdx.y) * kTileChannels;
  const int tile = min(kTileChannels, channels - first);
  // V divides the channel count and the tile (64), so a pack stays inside the tile.
  const int packs = tile / V;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * pixels_per_block;
  const std::int64_t items = (min(pixels, begin + pixels_per_block) - begin) * packs;
  const std::int64_t base = static_cast<std::int64_t>(image) * pixels * channels + first;
  // The first pass's loads go out before the gate is computed, so their latency overlaps the gate's.
  // y may alias x: each pack is read and then written by the same thread only.
  ScalePass<T, V> pass;
  pass.load_from(x, t, items, packs, base, begin, channels);

  const T* h = static_cast<const T*>(a.hidden) + static_cast<std::int64_t>(image) * a.units;
  for (int k = t; k < a.units; k += kBlock) hidden[k] = to_float(h[k]);
  __syncthreads();
  // Each warp computes kRows of the tile's gate values at once (every row's loads in flight).
  const int warp = t / 32, lane = t % 32;
  const auto* w2 = static_cast<const T*>(a.w2) + static_cast<std::int64_t>(first) * a.units;
  for (int j0 = warp * kRows; j0 < tile; j0 += kBlock / 32 * kRows) {
    float dots[kRows];
    warp_dots<T, 1, kRows>(w2, tile, a.units, a.units, j0, hidden, dots);
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      const int j = j0 + k;
      // Rounded to the storage type, as the gate layer stores its output.
      if (lane == 0 && j < tile)
        gate[j] = to_float(
            from_float<T>(activate(dots[k] + to_float(static_cast<const T*>(a.b2)[first + j]), a.act)));
    }
  }
  __syncthreads();
  for (std::int64_t i0 = t; i0 < items; i0 += kBlock * kPacksAtOnce) {
    if (i0 != t) pass.load_from(x, i0, items, packs, base, begin, channels);
    pass.scale_into(y, i0, items, packs, base, begin, channels, gate);
  }
}

}  // namespace

bool squeeze_excite_fits(std::int64_t channels, std::int64_t hidden, std::int64_t out) {
  return channels >= 1 && channels <= kMaxChannels && hidden >= 1 && hidden <= kMaxHidden && out == channels;
}

cudaError_t excite_scale(const void* x, const ExciteArgs& a, void* y, Elem e, int images, std::int64_t pixels,
                         int channels, cudaStream_t stream) {
  if (!squeeze_excite_fits(channels, a.units, channels) || images < 1 || pixels < 1)
    return cudaErrorInvalidValue;
  return dispatch(e, channels, [&](auto kind) {
    using T = typename decltype(kind)::type;
    constexpr int V = decltype(kind)::pack;
    const int tiles = (channels + kTileChannels - 1) / kTileChannels;
    // Enough pixel runs to fill the chip, but a run of at least one full pass of the block.
    const int tile_packs = std::min(kTileChannels, channels) / V;
    const std::int64_t min_run = (kPacksAtOnce * kBlock + tile_packs - 1) / tile_packs;
    const std::int64_t most_runs = (pixels + min_run - 1) / min_run;
    const std::int64_t runs =
        std::clamp<std::int64_t>(kWantedBlocks / (static_cast<std::int64_t>(tiles) * images), 1, most_runs);
    const auto per_block = static_cast<int>((pixels + runs - 1) / runs);
    const dim3 grid(static_cast<unsigned>((pixels + per_block - 1) / per_block), static_cast<unsigned>(tiles),
                    static_cast<unsigned>(images));
    return launch_early(excite_scale_kernel<T, V>, grid, kBlock, 0, stream, static_cast<const T*>(x), a,
                        static_cast<T*>(y), channels, pixels, per_block);
  });
}

}  // namespace kiln::cuda
