// The first fused attention kernel (see attention_kernels.h), kept as attention_tiled: the reference
// the split kernel is tested against and a fallback. One block per (query tile, head, image) walks all
// the keys in chunks with an online softmax: per chunk it scores its queries against the chunk's keys,
// rescales what it has accumulated to the new running maximum and adds the chunk's weighted values.
// Everything lives in shared memory in f32; the block stays simple rather than fast.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/attention_kernels.h"
#include "backends/cuda/attention_rows.cuh"
#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

constexpr int kQueries = 32;  // queries per block
constexpr int kKeys = 32;     // keys per chunk
constexpr int kThreads = 128;

// The block's shared memory, carved from one dynamic allocation. Rows of keys and scores are padded by
// one float so that threads walking a column do not hit the same bank.
struct Tile {
  float* q;       // [kQueries][key_dim]
  float* k;       // [kKeys][key_dim + 1]
  float* v;       // [kKeys][head_dim]
  float* p;       // [kQueries][kKeys + 1]: scores, then their exponentials
  float* acc;     // [kQueries][head_dim]
  float* peak;    // [kQueries]: the running maximum of each query's scores
  float* sum;     // [kQueries]: the running sum of their exponentials
  float* factor;  // [kQueries]: how much this chunk's new peak rescales what came before
};

__host__ __device__ inline int tile_floats(int key_dim, int head_dim) {
  return kQueries * key_dim + kKeys * (key_dim + 1) + kKeys * head_dim + kQueries * (kKeys + 1) +
         kQueries * head_dim + 3 * kQueries;
}

__device__ Tile carve(float* base, const AttentionShape& s) {
  Tile t;
  t.q = base;
  t.k = t.q + kQueries * s.key_dim;
  t.v = t.k + kKeys * (s.key_dim + 1);
  t.p = t.v + kKeys * s.head_dim;
  t.acc = t.p + kQueries * (kKeys + 1);
  t.peak = t.acc + kQueries * s.head_dim;
  t.sum = t.peak + kQueries;
  t.factor = t.sum + kQueries;
  return t;
}

// p[q][j] = (q . k_j) * scale for the chunk's keys; keys past the image score -inf (weight 0).
__device__ void score_chunk(const Tile& t, const AttentionShape& s, int first_key) {
  for (int i = threadIdx.x; i < kQueries * kKeys; i += blockDim.x) {
    const int q = i / kKeys, j = i % kKeys;
    float dot = 0.0f;
    for (int d = 0; d < s.key_dim; ++d) dot += t.q[q * s.key_dim + d] * t.k[j * (s.key_dim + 1) + d];
    t.p[q * (kKeys + 1) + j] = first_key + j < s.pixels ? dot * s.scale : -INFINITY;
  }
}

// Per query: the new running maximum, the chunk's exponentials (in place of its scores), their sum.
// Every chunk holds at least one real key, so the new maximum is finite and exp(-inf) gives 0 weights.
__device__ void update_softmax(const Tile& t) {
  for (int q = threadIdx.x; q < kQueries; q += blockDim.x) {
    float* row = t.p + q * (kKeys + 1);
    float peak = t.peak[q];
    for (int j = 0; j < kKeys; ++j) peak = fmaxf(peak, row[j]);
    float sum = 0.0f;
    for (int j = 0; j < kKeys; ++j) {
      row[j] = expf(row[j] - peak);
      sum += row[j];
    }
    const float factor = expf(t.peak[q] - peak);
    t.factor[q] = factor;
    t.sum[q] = t.sum[q] * factor + sum;
    t.peak[q] = peak;
  }
}

// acc[q][d] = acc[q][d] * factor[q] + sum_j p[q][j] v[j][d].
__device__ void accumulate(const Tile& t, const AttentionShape& s) {
  for (int i = threadIdx.x; i < kQueries * s.head_dim; i += blockDim.x) {
    const int q = i / s.head_dim, d = i % s.head_dim;
    float a = t.acc[i] * t.factor[q];
    for (int j = 0; j < kKeys; ++j) a += t.p[q * (kKeys + 1) + j] * t.v[j * s.head_dim + d];
    t.acc[i] = a;
  }
}

template <typename T>
__global__ void attention_kernel(const T* qkv, T* y, AttentionShape s) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  extern __shared__ float shared[];
  const Tile t = carve(shared, s);
  const int first_query = blockIdx.x * kQueries, head = blockIdx.y, image = blockIdx.z;
  const int channels = s.heads * (2 * s.key_dim + s.head_dim), base = head * (2 * s.key_dim + s.head_dim);
  const T* x = qkv + static_cast<std::int64_t>(image) * s.pixels * channels;
  load_attention_rows(x, s.pixels, channels, first_query, kQueries, base, s.key_dim, t.q, s.key_dim);
  for (int i = threadIdx.x; i < kQueries * s.head_dim; i += blockDim.x) t.acc[i] = 0.0f;
  for (int q = threadIdx.x; q < kQueries; q += blockDim.x) {
    t.peak[q] = -INFINITY;
    t.sum[q] = 0.0f;
  }
  for (int first_key = 0; first_key < s.pixels; first_key += kKeys) {
    load_attention_rows(x, s.pixels, channels, first_key, kKeys, base + s.key_dim, s.key_dim, t.k,
                        s.key_dim + 1);
    load_attention_rows(x, s.pixels, channels, first_key, kKeys, base + 2 * s.key_dim, s.head_dim, t.v,
                        s.head_dim);
    __syncthreads();
    score_chunk(t, s, first_key);
    __syncthreads();
    update_softmax(t);
    __syncthreads();
    accumulate(t, s);
    __syncthreads();  // before the next chunk overwrites keys, values and weights
  }
  const int out_channels = s.heads * s.head_dim;
  for (int i = threadIdx.x; i < kQueries * s.head_dim; i += blockDim.x) {
    const int q = i / s.head_dim, d = i % s.head_dim, pixel = first_query + q;
    if (pixel >= s.pixels) continue;
    y[(static_cast<std::int64_t>(image) * s.pixels + pixel) * out_channels + head * s.head_dim + d] =
        from_float<T>(t.acc[i] / t.sum[q]);
  }
}

}  // namespace

cudaError_t attention_tiled(const void* qkv, void* y, Elem e, const AttentionShape& s, cudaStream_t stream) {
  if (s.key_dim + s.head_dim > kAttentionMaxWidth) return cudaErrorInvalidValue;
  if (s.n == 0 || s.pixels == 0) return cudaSuccess;
  const dim3 grid((s.pixels + kQueries - 1) / kQueries, s.heads, s.n);
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(tile_floats(s.key_dim, s.head_dim));
  if (e == Elem::kF32) {
    launch_early(attention_kernel<float>, grid, kThreads, bytes, stream, static_cast<const float*>(qkv),
                 static_cast<float*>(y), s);
  } else {
    launch_early(attention_kernel<__half>, grid, kThreads, bytes, stream, static_cast<const __half*>(qkv),
                 static_cast<__half*>(y), s);
  }
  return cudaGetLastError();
}

}  // namespace kiln::cuda
