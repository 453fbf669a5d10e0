// The split-key attention kernel (see attention_kernels.h). A block takes 16 queries of one head and
// image and one range of the keys, staged 32 keys at a time in shared memory. Each of its four warps
// owns four queries and each lane one key of the chunk: the lane scores its key, the warp reduces the
// chunk's maximum and sum with shuffles (an online softmax), and each lane accumulates the weighted values
// of channels lane, lane + 32, ... in registers. With one split the block writes y; with more it writes
// each query's (maximum, sum, unnormalised values) and combine_splits_kernel merges the splits, so that a
// batch of one image still spreads over the whole GPU (flash-decoding).
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/attention_kernels.h"
#include "backends/cuda/kernels/attention_rows.cuh"
#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kQueriesPerWarp = 4;
constexpr int kQueries = kWarps * kQueriesPerWarp;  // per block
constexpr int kKeys = 32;                           // per chunk: one per lane
constexpr int kThreads = kWarps * 32;
constexpr int kValuesPerLane = (kAttentionMaxWidth + 31) / 32;
// About two blocks per SM of an H100 / H200 (132 SMs): fewer leave SMs idle, more only add combining.
constexpr std::int64_t kTargetBlocks = 264;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int query_tiles(const AttentionShape& s) { return static_cast<int>(ceil_div(s.pixels, kQueries)); }

// Key rows an odd number of floats apart, so that 32 lanes reading one channel of 32 keys hit 32 banks.
__host__ __device__ inline int key_pitch(int key_dim) { return key_dim | 1; }

std::size_t shared_bytes(const AttentionShape& s) {
  return sizeof(float) *
         static_cast<std::size_t>(kQueries * s.key_dim + kKeys * key_pitch(s.key_dim) + kKeys * s.head_dim);
}

// Per query of a partial result: its maximum score, the sum of exp(score - maximum), then head_dim values.
__host__ __device__ inline int partial_width(const AttentionShape& s) { return s.head_dim + 2; }

// One query's online softmax, per lane: the running maximum and sum (the same in every lane) and the
// unnormalised weighted values of channels lane + 32 c.
struct QueryState {
  float peak = -INFINITY;
  float sum = 0.0f;
  float acc[kValuesPerLane] = {};
};

// The shared staging: q [kQueries][key_dim], k [kKeys][key_pitch], v [kKeys][head_dim].
struct Staged {
  float* q;
  float* k;
  float* v;
};

// Adds the staged chunk's keys to the states of the warp's queries (rows of q, key_dim apart); `valid`
// is false in lanes whose key lies past the block's range. Lane 0's key is always valid, so each new
// maximum is finite and invalid keys weigh 0. Each key's and value's channel is read once for all the
// warp's queries.
__device__ void add_chunk(QueryState (&st)[kQueriesPerWarp], const float* q, const Staged& t,
                          const AttentionShape& s, bool valid) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const float* k = t.k + lane * key_pitch(s.key_dim);
  float weight[kQueriesPerWarp] = {};
  for (int d = 0; d < s.key_dim; ++d) {
    const float kd = k[d];
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) weight[i] += q[i * s.key_dim + d] * kd;
  }
#pragma unroll
  for (int i = 0; i < kQueriesPerWarp; ++i) {
    const float score = valid ? weight[i] * s.scale : -INFINITY;
    const float peak = fmaxf(st[i].peak, warp_max(score));
    weight[i] = expf(score - peak);
    const float factor = expf(st[i].peak - peak);  // 0 on the first chunk
    st[i].sum = st[i].sum * factor + warp_sum(weight[i]);
    st[i].peak = peak;
#pragma unroll
    for (int c = 0; c < kValuesPerLane; ++c) st[i].acc[c] *= factor;
  }
  for (int j = 0; j < kKeys; ++j) {
    const float* row = t.v + j * s.head_dim;
    float v[kValuesPerLane];
#pragma unroll
    for (int c = 0; c < kValuesPerLane; ++c) v[c] = lane + 32 * c < s.head_dim ? row[lane + 32 * c] : 0.0f;
#pragma unroll
    for (int i = 0; i < kQueriesPerWarp; ++i) {
      const float w = __shfl_sync(kFullWarp, weight[i], j);
#pragma unroll
      for (int c = 0; c < kValuesPerLane; ++c) st[i].acc[c] += w * v[c];
    }
  }
}

// One query's result: y normalised (one split) or its partial record (several).
template <typename T>
__device__ void write_query(const QueryState& st, T* y, float* partial, const AttentionShape& s,
                            const AttentionSplit& split, int image, int head, int part, int pixel) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (split.splits == 1) {
    T* out =
        y + (static_cast<std::int64_t>(image) * s.pixels + pixel) * s.heads * s.head_dim + head * s.head_dim;
#pragma unroll
    for (int c = 0; c < kValuesPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < s.head_dim) out[d] = from_float<T>(st.acc[c] / st.sum);
    }
    return;
  }
  const std::int64_t record =
      ((static_cast<std::int64_t>(image) * s.heads + head) * split.splits + part) * s.pixels + pixel;
  float* out = partial + record * partial_width(s);
  if (lane == 0) {
    out[0] = st.peak;
    out[1] = st.sum;
  }
#pragma unroll
  for (int c = 0; c < kValuesPerLane; ++c) {
    const int d = lane + 32 * c;
    if (d < s.head_dim) out[2 + d] = st.acc[c];
  }
}

// grid (query tiles, heads x splits, images).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    split_attention_kernel(const T* qkv, T* y, float* partial, AttentionShape s, AttentionSplit split) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  extern __shared__ float shared[];
  const int pitch = key_pitch(s.key_dim);
  const Staged t{shared, shared + kQueries * s.key_dim, shared + kQueries * s.key_dim + kKeys * pitch};
  const int first_query = static_cast<int>(blockIdx.x) * kQueries, image = static_cast<int>(blockIdx.z);
  const int head = static_cast<int>(blockIdx.y) / split.splits,
            part = static_cast<int>(blockIdx.y) % split.splits;
  const int key_begin = part * split.keys_per_split;
  const int key_end = min(s.pixels, key_begin + split.keys_per_split);
  const int width = 2 * s.key_dim + s.head_dim, channels = s.heads * width, base = head * width;
  const T* x = qkv + static_cast<std::int64_t>(image) * s.pixels * channels;
  load_attention_rows(x, s.pixels, channels, first_query, kQueries, base, s.key_dim, t.q, s.key_dim);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  QueryState st[kQueriesPerWarp];
  for (int first_key = key_begin; first_key < key_end; first_key += kKeys) {
    __syncthreads();  // the previous chunk is consumed
    load_attention_rows(x, s.pixels, channels, first_key, kKeys, base + s.key_dim, s.key_dim, t.k, pitch);
    load_attention_rows(x, s.pixels, channels, first_key, kKeys, base + 2 * s.key_dim, s.head_dim, t.v,
                        s.head_dim);
    __syncthreads();  // queries (first time), keys and values are staged
    const bool valid = first_key + lane < key_end;
    add_chunk(st, t.q + warp * kQueriesPerWarp * s.key_dim, t, s, valid);
  }
#pragma unroll
  for (int i = 0; i < kQueriesPerWarp; ++i) {
    const int pixel = first_query + warp * kQueriesPerWarp + i;
    if (pixel < s.pixels) write_query(st[i], y, partial, s, split, image, head, part, pixel);
  }
}

// One thread per output value: the splits' partial sums rescaled to their common maximum.
template <typename T>
__global__ void combine_splits_kernel(const float* partial, T* y, AttentionShape s, int splits) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t total = static_cast<std::int64_t>(s.n) * s.pixels * s.heads * s.head_dim;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int d = static_cast<int>(i % s.head_dim);
  const std::int64_t row = i / s.head_dim;  // (image, pixel, head), as y stores them
  const int head = static_cast<int>(row % s.heads);
  const int pixel = static_cast<int>(row / s.heads % s.pixels);
  const std::int64_t image = row / s.heads / s.pixels;
  const int width = partial_width(s);
  const std::int64_t split_pitch = static_cast<std::int64_t>(s.pixels) * width;
  const float* p = partial + ((image * s.heads + head) * splits * s.pixels + pixel) * width;
  float peak = -INFINITY;
  for (int k = 0; k < splits; ++k) peak = fmaxf(peak, p[k * split_pitch]);
  float sum = 0.0f, value = 0.0f;
  for (int k = 0; k < splits; ++k) {
    const float* record = p + k * split_pitch;
    const float w = expf(record[0] - peak);
    sum += w * record[1];
    value += w * record[2 + d];
  }
  y[i] = from_float<T>(value / sum);
}

template <typename T>
cudaError_t launch(const void* qkv, void* y, float* partial, const AttentionShape& s,
                   const AttentionSplit& split, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(query_tiles(s)), static_cast<unsigned>(s.heads * split.splits),
                  static_cast<unsigned>(s.n));
  launch_early(split_attention_kernel<T>, grid, kThreads, shared_bytes(s), stream, static_cast<const T*>(qkv),
               static_cast<T*>(y), partial, s, split);
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess || split.splits == 1) return launched;
  const std::int64_t values = static_cast<std::int64_t>(s.n) * s.pixels * s.heads * s.head_dim;
  launch_early(combine_splits_kernel<T>, blocks_for(values), kBlock, 0, stream, partial, static_cast<T*>(y),
               s, split.splits);
  return cudaGetLastError();
}

}  // namespace

AttentionSplit attention_split(const AttentionShape& s) {
  const std::int64_t chunks = ceil_div(s.pixels, kKeys);
  const std::int64_t blocks = static_cast<std::int64_t>(query_tiles(s)) * s.heads * s.n;
  if (chunks <= 1 || blocks <= 0) return {1, kKeys * static_cast<int>(std::max<std::int64_t>(chunks, 1))};
  const std::int64_t wanted = std::clamp<std::int64_t>(ceil_div(kTargetBlocks, blocks), 1, chunks);
  const std::int64_t chunks_per_split = ceil_div(chunks, wanted);
  return {static_cast<int>(ceil_div(chunks, chunks_per_split)), static_cast<int>(chunks_per_split * kKeys)};
}

std::size_t attention_workspace_bytes(const AttentionShape& s) {
  const AttentionSplit split = attention_split(s);
  if (split.splits == 1) return 0;
  return sizeof(float) * static_cast<std::size_t>(s.n) * static_cast<std::size_t>(s.heads) *
         static_cast<std::size_t>(split.splits) * static_cast<std::size_t>(s.pixels) *
         static_cast<std::size_t>(partial_width(s));
}

cudaError_t attention(const void* qkv, void* y, void* workspace, Elem e, const AttentionShape& s,
                      cudaStream_t stream) {
  if (s.key_dim < 1 || s.head_dim < 1 || s.key_dim + s.head_dim > kAttentionMaxWidth)
    return cudaErrorInvalidValue;
  if (s.n == 0 || s.pixels == 0) return cudaSuccess;
  if (attention_uses_mma(e, s)) return attention_mma(qkv, y, e, s, stream);
  const AttentionSplit split = attention_split(s);
  if (split.splits > 1 && workspace == nullptr) return cudaErrorInvalidValue;
  float* partial = static_cast<float*>(workspace);
  return e == Elem::kF32 ? launch<float>(qkv, y, partial, s, split, stream)
                         : launch<__half>(qkv, y, partial, s, split, stream);
}

}  // namespace kiln::cuda
