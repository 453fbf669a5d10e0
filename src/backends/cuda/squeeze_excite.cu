// excite_scale (see squeeze_excite.h; squeeze_pool is the global pool's kernel in pooling.cu). A block
// scales a tile of channels over a run of one image's pixels; it first computes the gate of its channels
// itself (a warp per channel, fc2's row against the hidden vector), so the gate never goes through memory.
// Blocks of other pixel runs compute the same gate again: a tile's rows are at most 64 x 1024 weights
// read from L2, against the launch and the round trip a gate step of its own costs.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"
#include "backends/cuda/squeeze_excite.h"

namespace kiln::cuda {
namespace {

constexpr int kTileChannels = 64;
constexpr int kMaxChannels = 4096, kMaxHidden = 1024;
constexpr int kWantedBlocks = 4 * 132;  // about four blocks per multiprocessor of an H200

template <typename T, int V>
__global__ void __launch_bounds__(kBlock) excite_scale_kernel(const T* x, ExciteArgs a, T* y, int channels,
                                                              std::int64_t pixels, int pixels_per_block) {
  __shared__ float hidden[kMaxHidden];
  __shared__ float gate[kTileChannels];
  const int t = static_cast<int>(threadIdx.x), image = static_cast<int>(blockIdx.z);
  const int first = static_cast<int>(blockIdx.y) * kTileChannels;
  const int tile = min(kTileChannels, channels - first);
  const T* h = static_cast<const T*>(a.hidden) + static_cast<std::int64_t>(image) * a.units;
  for (int k = t; k < a.units; k += kBlock) hidden[k] = to_float(h[k]);
  __syncthreads();
  const int warp = t / 32, lane = t % 32;
  for (int j = warp; j < tile; j += kBlock / 32) {
    const T* row = static_cast<const T*>(a.w2) + static_cast<std::int64_t>(first + j) * a.units;
    float acc = 0.0f;
    for (int k = lane; k < a.units; k += 32) acc += to_float(row[k]) * hidden[k];
    acc = warp_sum(acc);
    // Rounded to the storage type, as the gate layer stores its output.
    if (lane == 0)
      gate[j] = to_float(from_float<T>(activate(acc + to_float(static_cast<const T*>(a.b2)[first + j]), a.act)));
  }
  __syncthreads();
  // V divides the channel count and the tile (64), so a pack stays inside the tile.
  const int packs = tile / V;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * pixels_per_block;
  const std::int64_t count = min(pixels, begin + pixels_per_block) - begin;
  const std::int64_t image_base = static_cast<std::int64_t>(image) * pixels * channels + first;
  for (std::int64_t i = t; i < count * packs; i += kBlock) {
    const int cp = static_cast<int>(i % packs);
    const std::int64_t offset = image_base + (begin + i / packs) * channels + cp * V;
    float v[V];
    load<T, V>(x + offset, v);
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] *= gate[cp * V + k];
    store<T, V>(y + offset, v);
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
    // Enough pixel runs to fill the chip, but a run of at least one pass of the block over the tile.
    const int tile_packs = std::min(kTileChannels, channels) / V;
    const std::int64_t min_run = (kBlock + tile_packs - 1) / tile_packs;
    const std::int64_t most_runs = (pixels + min_run - 1) / min_run;
    const std::int64_t runs =
        std::clamp<std::int64_t>(kWantedBlocks / (static_cast<std::int64_t>(tiles) * images), 1, most_runs);
    const auto per_block = static_cast<int>((pixels + runs - 1) / runs);
    const dim3 grid(static_cast<unsigned>((pixels + per_block - 1) / per_block), static_cast<unsigned>(tiles),
                    static_cast<unsigned>(images));
    excite_scale_kernel<T, V><<<grid, kBlock, 0, stream>>>(static_cast<const T*>(x), a, static_cast<T*>(y),
                                                           channels, pixels, per_block);
    return cudaGetLastError();
  });
}

}  // namespace kiln::cuda
