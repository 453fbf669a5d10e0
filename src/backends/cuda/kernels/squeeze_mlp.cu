// squeeze_mlp (see squeeze_mlp_kernels.h). One cluster of up to 16 thread blocks per image (Hopper's
// thread-block clusters), sharing vectors through distributed shared memory:
//  1. pool (where fused): each block sums all channels over its slice of the pixels, then adds the
//     cluster's partial sums in rank order (without a pool, each block reads the pooled vector);
//  2. fc1: each block computes a slice of the hidden units and gathers the others' slices;
//  3. fc2: each block computes a slice of the outputs.
// Weights are read with 16-byte loads by teams of lanes (one row per team, several rows at once to keep
// loads in flight), so 16 blocks read a gate's weights at a useful fraction of the chip's bandwidth.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"
#include "backends/cuda/kernels/squeeze_mlp_kernels.h"

namespace kiln::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 512;
constexpr int kMaxCluster = 16;
constexpr int kRowsAtOnce = 4;  // rows a team reads at once where a block has many
constexpr int kMaxIn = 4096, kMaxHidden = 1024;
constexpr int kSharedBytes = 48 * 1024;  // what a launch gets without opting in to more

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

__host__ __device__ constexpr int round16(int bytes) { return (bytes + 15) / 16 * 16; }

// Shared memory, in bytes, each part 16-byte aligned: the pool's f32 scratch (max(in, kThreads * 8)),
// the pooled vector, this block's f32 slice of the hidden vector (for the smallest cluster, 8) and the
// whole hidden vector; the vectors are stored rounded to the element type, as the layers store them, so
// the dot products read them as 16-byte packs like the weights.
__host__ __device__ constexpr int scratch_bytes(int in) {
  return 4 * (in > kThreads * 8 ? in : kThreads * 8);
}
__host__ __device__ constexpr int pooled_bytes(int in, int elem) { return round16(in * elem); }
__host__ __device__ constexpr int mine_bytes(int hidden) { return round16(4 * ceil_div(hidden, 8)); }
__host__ __device__ constexpr int shared_bytes(int in, int hidden, int elem) {
  return scratch_bytes(in) + pooled_bytes(in, elem) + mine_bytes(hidden) + round16(hidden * elem);
}

struct GateArgs {
  const void* x;
  const void *w1, *b1, *w2, *b2;
  void* y;
  Act act1, act2;
  GateShape s;
};

// Sums the radix sum of this block's pixel slice into part[0, in) (f32, fixed order). Threads are `lanes`
// along the channel packs by `rows` along the pixels; scratch holds [rows][in].
template <typename T, int V>
__device__ void pool_slice(const T* x, const GateShape& s, int rank, int cluster, float* scratch) {
  const int packs = s.in / V, t = static_cast<int>(threadIdx.x);
  const int lanes = min(packs, kThreads), rows = kThreads / lanes;
  const int lane = t % lanes, row = t / lanes;
  const int per = ceil_div(s.hw, cluster), begin = rank * per, end = min(s.hw, begin + per);
  const T* image = x + static_cast<std::int64_t>(blockIdx.y) * s.hw * s.radix * s.in;
  if (row < rows) {
    for (int cp = lane; cp < packs; cp += lanes) {
      float acc[V];
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = 0.0f;
      int p = begin + row;
      // Four pixels' loads in flight before their sums (added in pixel order, as the tail does).
      for (; p + 3 * rows < end; p += 4 * rows) {
        for (int r = 0; r < s.radix; ++r) {
          float v[4][V];
#pragma unroll
          for (int j = 0; j < 4; ++j)
            load<T, V>(image + (static_cast<std::int64_t>(p + j * rows) * s.radix + r) * s.in + cp * V, v[j]);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
#pragma unroll
            for (int k = 0; k < V; ++k) acc[k] += v[j][k];
          }
        }
      }
      for (; p < end; p += rows) {
        for (int r = 0; r < s.radix; ++r) {
          float v[V];
          load<T, V>(image + (static_cast<std::int64_t>(p) * s.radix + r) * s.in + cp * V, v);
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] += v[k];
        }
      }
#pragma unroll
      for (int k = 0; k < V; ++k) scratch[row * s.in + cp * V + k] = acc[k];
    }
  }
  __syncthreads();
  // Row 0 becomes the block's partial sums: each channel is read and written by one thread.
  for (int ch = t; ch < s.in; ch += kThreads) {
    float sum = scratch[ch];
    for (int r = 1; r < rows; ++r) sum += scratch[r * s.in + ch];
    scratch[ch] = sum;
  }
}

// pooled[0, in): the mean over the cluster's partial sums (added in rank order), rounded to T. Every
// block adds all of them itself: one cluster barrier instead of two and a gather. No block overwrites
// its partial sums later, and the barriers after fc1 keep every block alive until its peers are done.
template <typename T>
__device__ void reduce_pool(cg::cluster_group& cluster, const GateShape& s, float* part, T* pooled) {
  const int size = static_cast<int>(cluster.num_blocks());
  const float inverse = 1.0f / static_cast<float>(s.hw);
  cluster.sync();  // every block's partial sums written
  for (int ch = static_cast<int>(threadIdx.x); ch < s.in; ch += kThreads) {
    float sum = 0.0f;
#pragma unroll 4
    for (int q = 0; q < size; ++q) sum += cluster.map_shared_rank(part, static_cast<unsigned>(q))[ch];
    pooled[ch] = from_float<T>(sum * inverse);
  }
  __syncthreads();
}

// Rows [first, first + count) of a grouped dense layer W [rows][row_len] applied to vec (row u reads
// vec[group(u) * row_len, +row_len)); sink(u, dot + bias[u]) gets each result. A team of `width` lanes
// takes kRows rows at once, so each lane has kRows 16-byte weight loads in flight. Every thread of the block
// must call it (the loop bounds are uniform; teams reduce with shuffles).
template <typename T, int V, int kRows, typename Sink>
__device__ void dense_rows(const T* w, const T* bias, int row_len, int rows_per_group, int first, int count,
                           const T* vec, Sink sink) {
  const int packs = row_len / V;
  int width = 1;
  while (width < packs && width < 32) width *= 2;
  const int teams = kThreads / width, team = static_cast<int>(threadIdx.x) / width;
  const int lane = static_cast<int>(threadIdx.x) % width;
  const bool one_group = rows_per_group >= first + count;  // every row reads the same vector
  const int chunks = ceil_div(count, teams * kRows);
  for (int chunk = 0; chunk < chunks; ++chunk) {
    float acc[kRows], b[kRows];
    const T* row[kRows];
    const T* v[kRows];
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      // Rows past the end read the last row again (in bounds) and are dropped below.
      const int u = first + min(count - 1, chunk * teams * kRows + k * teams + team);
      row[k] = w + static_cast<std::int64_t>(u) * row_len;
      v[k] = vec + (u / rows_per_group) * row_len;
      acc[k] = 0.0f;
      b[k] = to_float(bias[u]);  // loaded with the weights rather than after them
    }
#pragma unroll(kRows == 1 ? 4 : 1)
    for (int p = lane; p < packs; p += width) {
      float wv[kRows][V], xv[V];
#pragma unroll
      for (int k = 0; k < kRows; ++k) load<T, V>(row[k] + p * V, wv[k]);
#pragma unroll
      for (int k = 0; k < kRows; ++k) {
        if (k == 0 || !one_group) load<T, V>(v[k] + p * V, xv);
#pragma unroll
        for (int i = 0; i < V; ++i) acc[k] += wv[k][i] * xv[i];
      }
    }
#pragma unroll
    for (int k = 0; k < kRows; ++k) {
      for (int offset = width / 2; offset > 0; offset /= 2)
        acc[k] += __shfl_xor_sync(kFullWarp, acc[k], offset);
      const int j = chunk * teams * kRows + k * teams + team;
      if (lane == 0 && j < count) sink(first + j, acc[k] + b[k]);
    }
  }
}

// dense_rows with kRowsAtOnce rows where the rows outnumber the teams, else one row per team (no repeated
// loads).
template <typename T, int V, typename Sink>
__device__ void dense(const T* w, const T* bias, int row_len, int rows_per_group, int first, int count,
                      const T* vec, Sink sink) {
  int width = 1;
  while (width < row_len / V && width < 32) width *= 2;
  if (count > kThreads / width)
    dense_rows<T, V, kRowsAtOnce>(w, bias, row_len, rows_per_group, first, count, vec, sink);
  else
    dense_rows<T, V, 1>(w, bias, row_len, rows_per_group, first, count, vec, sink);
}

template <typename T, int V>
__global__ void __launch_bounds__(kThreads, 2) gate_kernel(GateArgs a) {  // two blocks per SM
  extern __shared__ __align__(16) unsigned char shared[];
  const GateShape& s = a.s;
  constexpr int e = static_cast<int>(sizeof(T));
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank()), size = static_cast<int>(cluster.num_blocks());
  auto* part = reinterpret_cast<float*>(shared);
  auto* pooled = reinterpret_cast<T*>(shared + scratch_bytes(s.in));
  auto* mine = reinterpret_cast<float*>(shared + scratch_bytes(s.in) + pooled_bytes(s.in, e));
  auto* hidden =
      reinterpret_cast<T*>(shared + scratch_bytes(s.in) + pooled_bytes(s.in, e) + mine_bytes(s.hidden));
  const std::int64_t image = blockIdx.y;

  if (s.hw == 1 && s.radix == 1) {
    // No pool: x is the pooled vector.
    const T* x = static_cast<const T*>(a.x) + image * s.in;
    for (int ch = static_cast<int>(threadIdx.x); ch < s.in; ch += kThreads) pooled[ch] = x[ch];
    __syncthreads();
  } else {
    pool_slice<T, V>(static_cast<const T*>(a.x), s, rank, size, part);
    reduce_pool<T>(cluster, s, part, pooled);
  }

  const int slice = ceil_div(s.hidden, size), first = rank * slice;
  dense<T, V>(static_cast<const T*>(a.w1), static_cast<const T*>(a.b1), s.in / s.groups1,
              s.hidden / s.groups1, first, max(0, min(s.hidden - first, slice)), pooled,
              [&](int u, float v) { mine[u - first] = to_float(from_float<T>(activate(v, a.act1))); });
  cluster.sync();  // every hidden slice written
  for (int k = static_cast<int>(threadIdx.x); k < s.hidden; k += kThreads)
    hidden[k] = from_float<T>(cluster.map_shared_rank(mine, static_cast<unsigned>(k / slice))[k % slice]);
  cluster.sync();  // every block done reading its peers (none exits while another still reads)

  const int out_slice = ceil_div(s.out, size), out_first = rank * out_slice;
  T* y = static_cast<T*>(a.y) + image * s.out;
  dense<T, V>(static_cast<const T*>(a.w2), static_cast<const T*>(a.b2), s.hidden / s.groups2,
              s.out / s.groups2, out_first, max(0, min(s.out - out_first, out_slice)), hidden,
              [&](int o, float v) { y[o] = from_float<T>(activate(v, a.act2)); });
}

template <typename T, int V>
cudaError_t launch(const GateArgs& a, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(a.s.cluster), static_cast<unsigned>(a.s.n));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes =
      static_cast<std::size_t>(shared_bytes(a.s.in, a.s.hidden, static_cast<int>(sizeof(T))));
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(a.s.cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, gate_kernel<T, V>, a);
}

// The widest pack every row and the pooled channels allow.
template <typename T>
bool packs_fit(const GateShape& s) {
  constexpr int v = kPack<T>;
  return s.in % v == 0 && (s.in / s.groups1) % v == 0 && (s.hidden / s.groups2) % v == 0;
}

// Lets `kernel` run in clusters of 16 and says whether one such cluster can be resident.
template <typename T, int V>
bool allows_cluster_of_16() {
  if (cudaFuncSetAttribute(gate_kernel<T, V>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) !=
      cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kMaxCluster);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = kSharedBytes;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim = {static_cast<unsigned>(kMaxCluster), 1, 1};
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, gate_kernel<T, V>, &config) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return clusters >= 1;
}

}  // namespace

bool squeeze_mlp_fits(int in, int hidden, int out, int groups1, int groups2) {
  return in >= 1 && hidden >= 1 && out >= 1 && in <= kMaxIn && hidden <= kMaxHidden && groups1 >= 1 &&
         groups2 >= 1 && in % groups1 == 0 && hidden % groups1 == 0 && hidden % groups2 == 0 &&
         out % groups2 == 0 && shared_bytes(in, hidden, 4) <= kSharedBytes;
}

// The pool in the gate's launch runs on one cluster (16 blocks) per image instead of a grid sized to the
// chip; it saves the pool's own launch and the pooled vector's round trip, but every block then adds
// in x 16 partial sums over distributed shared memory. Measured (fp16, batch 1, in a CUDA graph; fused
// against pool launch + gate launch), the fused launch won on ResNeSt-50d's and EfficientNet-B0's gates
// up to 512 channels and lost beyond: the partial sums then cost more than the launch saves.
// Bandwidth bounds the other side: one cluster streams the image from L2 at a fraction of what a
// chip-wide pool reads (about 1/7), so fusing pays while that slower read costs less than the launch it
// saves, i.e. while an image's pool reads at most about 1.1 MB (B0's first gate reads 0.8 MB in fp16;
// B7's first, 300 x 300 x 64, 11.5 MB keeps its pool). The rule is per image: with many images the two
// ways measured alike (the images alone fill the chip, and the launch saved is small against the pool).
bool squeeze_mlp_pools_fast(std::int64_t hw, std::int64_t radix, std::int64_t channels,
                            std::size_t elem_bytes) {
  constexpr std::int64_t kMaxPooledChannels = 512;
  constexpr double kFusedBytesPerUs = 0.5e6, kChipBytesPerUs = 3.5e6, kLaunchUs = 2.0;
  const double bytes = static_cast<double>(hw * radix * channels) * static_cast<double>(elem_bytes);
  return channels <= kMaxPooledChannels && bytes / kFusedBytesPerUs <= bytes / kChipBytesPerUs + kLaunchUs;
}

int gate_cluster_size(Elem e, int n) {
  // Every instantiation must allow the non-portable size before a launch uses it.
  static const bool f32 = allows_cluster_of_16<float, 4>() && allows_cluster_of_16<float, 1>();
  static const bool f16 = allows_cluster_of_16<__half, 8>() && allows_cluster_of_16<__half, 1>();
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    cudaGetLastError();
    return 8;
  }
  // Sixteen blocks per image while they fit in one wave (two blocks per multiprocessor); beyond, the
  // images alone fill the chip, and eight blocks each read every weight half as many times.
  const bool one_wave = static_cast<std::int64_t>(n) * kMaxCluster <= 2 * static_cast<std::int64_t>(sms);
  return (e == Elem::kF32 ? f32 : f16) && one_wave ? kMaxCluster : 8;
}

cudaError_t squeeze_mlp(const void* x, const void* w1, const void* b1, Act act1, const void* w2,
                        const void* b2, Act act2, void* y, Elem e, const GateShape& s, cudaStream_t stream) {
  if (s.n < 1 || s.hw < 1 || s.radix < 1 || (s.cluster != 8 && s.cluster != kMaxCluster) ||
      !squeeze_mlp_fits(s.in, s.hidden, s.out, s.groups1, s.groups2))
    return cudaErrorInvalidValue;
  const GateArgs a{x, w1, b1, w2, b2, y, act1, act2, s};
  if (e == Elem::kF32) return packs_fit<float>(s) ? launch<float, 4>(a, stream) : launch<float, 1>(a, stream);
  return packs_fit<__half>(s) ? launch<__half, 8>(a, stream) : launch<__half, 1>(a, stream);
}

}  // namespace kiln::cuda
