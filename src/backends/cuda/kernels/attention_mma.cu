// The tensor-core attention kernel (see attention_kernels.h): fp16 q, k and v, f32 accumulation, for the
// PSA sizes of YOLOv10 (key_dim 32, head_dim 64). A block takes 64 queries of one head and image, four
// warps of 16; each step stages 64 keys (rows) and their values (transposed) in shared memory. A warp
// scores its 16 queries against the 64 keys with mma.sync m16n8k16 (f32 results in registers), keeps an
// online softmax per query row (each row lives in the four lanes of a quad, reduced with two shuffles),
// rounds the weights to fp16 and multiplies them by the values with the same instruction, its score
// registers becoming the next product's A operand as they are. Nothing of the score matrix reaches
// memory; the shared-memory traffic per key and query is a few bytes instead of the SIMT kernels' few
// loads per multiply-add.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "backends/cuda/kernels/attention_kernels.h"
#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

constexpr int kKeyDim = 32;
constexpr int kHeadDim = 64;
constexpr int kWarps = 4;
constexpr int kRows = 16;                 // queries per warp: one m16 tile
constexpr int kQueries = kWarps * kRows;  // per block
constexpr int kChunk = 64;                // keys per step
constexpr int kThreads = kWarps * 32;
// Shared rows padded by 8 halves (16 bytes), so that the eight rows a fragment load touches start in
// different banks.
constexpr int kKeyPitch = kKeyDim + 8;
constexpr int kValuePitch = kChunk + 8;
constexpr float kLog2e = 1.4426950408889634f;

// d += a b for one m16n8k16 tile: a 16x16 row-major (4 registers of two halves), b 16x8 column-major
// (2 registers), d 16x8 f32. Lane (g = lane / 4, t = lane % 4) holds a[g][2t..], a[g+8][2t..],
// a[g][2t+8..], a[g+8][2t+8..]; b[2t..][g], b[2t+8..][g]; d[g][2t..2t+1], d[g+8][2t..2t+1].
__device__ inline void mma_16x8x16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ inline unsigned two_halves(const __half* p) { return *reinterpret_cast<const unsigned*>(p); }

__device__ inline unsigned packed(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&h);
}

__device__ inline float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(kFullWarp, v, 1));
  return fmaxf(v, __shfl_xor_sync(kFullWarp, v, 2));
}

__device__ inline float quad_sum(float v) {
  v += __shfl_xor_sync(kFullWarp, v, 1);
  return v + __shfl_xor_sync(kFullWarp, v, 2);
}

struct Shared {
  __half q[kQueries][kKeyPitch];
  __half k[kChunk][kKeyPitch];
  __half vt[kHeadDim][kValuePitch];  // values transposed: [channel][key]
};

// Channels `channel` and `channel + 1` of `pixel`'s qkv row; zeros past the image.
__device__ inline __half2 channel_pair(const __half* x, int pixels, int channels, int pixel, int channel) {
  return pixel < pixels
             ? *reinterpret_cast<const __half2*>(x + static_cast<std::int64_t>(pixel) * channels + channel)
             : __floats2half2_rn(0.0f, 0.0f);
}

// Rows [first, first + rows) of `width` channels from `offset` of each pixel's qkv row into dst (rows
// `pitch` halves apart), two halves per thread and step; pixels past the image read as zeros.
__device__ void stage_rows(const __half* x, int pixels, int channels, int first, int rows, int offset,
                           int width, __half* dst, int pitch) {
  const int pairs = width / 2;
  for (int i = static_cast<int>(threadIdx.x); i < rows * pairs; i += kThreads) {
    const int row = i / pairs, pair = i % pairs, pixel = first + row;
    const __half2 v = channel_pair(x, pixels, channels, pixel, offset + 2 * pair);
    *reinterpret_cast<__half2*>(dst + row * pitch + 2 * pair) = v;
  }
}

// The chunk's values, transposed: vt[c][j] = v of key first + j, channel c (zeros past the image, so
// that their zero weights multiply zeros).
__device__ void stage_values(const __half* x, int pixels, int channels, int first, int offset, Shared& sh) {
  constexpr int kPairs = kHeadDim / 2;
  for (int i = static_cast<int>(threadIdx.x); i < kChunk * kPairs; i += kThreads) {
    const int key = i / kPairs, pair = i % kPairs, pixel = first + key;
    const __half2 v = channel_pair(x, pixels, channels, pixel, offset + 2 * pair);
    sh.vt[2 * pair][key] = __low2half(v);
    sh.vt[2 * pair + 1][key] = __high2half(v);
  }
}

// One warp's 16 query rows: rows g and g + 8 of its tile in this lane (g = lane / 4).
struct RowState {
  float peak[2] = {-INFINITY, -INFINITY};  // running maximum score (log2 units)
  float sum[2] = {0.0f, 0.0f};             // this lane's part of the running sum of exponentials
  float out[kHeadDim / 8][4] = {};         // unnormalised outputs: 8 channel tiles of the m16n8 layout
};

// Scores of the warp's queries against the chunk's 64 keys (scaled to log2 units), keys past the image
// at -inf.
__device__ void score_chunk(float (&s)[kChunk / 8][4], const unsigned (&q)[kKeyDim / 16][4], const Shared& sh,
                            int first_key, int pixels, float scale_log2) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
#pragma unroll
  for (int n = 0; n < kChunk / 8; ++n) {
    s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int k = 0; k < kKeyDim / 16; ++k) {
      const __half* row = &sh.k[n * 8 + g][k * 16 + 2 * t];
      mma_16x8x16(s[n], q[k], two_halves(row), two_halves(row + 8));
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int key = first_key + n * 8 + 2 * t + (i & 1);
      s[n][i] = key < pixels ? s[n][i] * scale_log2 : -INFINITY;
    }
  }
}

// The online softmax step for the chunk's scores (replaced by their fp16-bound exponentials), then the
// weighted values added to the outputs.
__device__ void add_chunk(RowState& st, float (&s)[kChunk / 8][4], const Shared& sh) {
  const int lane = static_cast<int>(threadIdx.x % 32), g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float peak = st.peak[r];
#pragma unroll
    for (int n = 0; n < kChunk / 8; ++n) peak = fmaxf(peak, fmaxf(s[n][2 * r], s[n][2 * r + 1]));
    peak = quad_max(peak);  // finite: every chunk holds a key inside the image
    const float factor = exp2f(st.peak[r] - peak);
    st.peak[r] = peak;
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < kChunk / 8; ++n) {
      s[n][2 * r] = exp2f(s[n][2 * r] - peak);
      s[n][2 * r + 1] = exp2f(s[n][2 * r + 1] - peak);
      sum += s[n][2 * r] + s[n][2 * r + 1];
    }
    st.sum[r] = st.sum[r] * factor + sum;
#pragma unroll
    for (int c = 0; c < kHeadDim / 8; ++c) {
      st.out[c][2 * r] *= factor;
      st.out[c][2 * r + 1] *= factor;
    }
  }
#pragma unroll
  for (int k = 0; k < kChunk / 16; ++k) {
    // The scores of keys 16k..16k+15 as they sit in the lane are the A operand of the product.
    const unsigned p[4] = {packed(s[2 * k][0], s[2 * k][1]), packed(s[2 * k][2], s[2 * k][3]),
                           packed(s[2 * k + 1][0], s[2 * k + 1][1]),
                           packed(s[2 * k + 1][2], s[2 * k + 1][3])};
#pragma unroll
    for (int c = 0; c < kHeadDim / 8; ++c) {
      const __half* row = &sh.vt[c * 8 + g][k * 16 + 2 * t];
      mma_16x8x16(st.out[c], p, two_halves(row), two_halves(row + 8));
    }
  }
}

// grid (query tiles, heads, images).
__global__ void __launch_bounds__(kThreads)
    attention_mma_kernel(const __half* qkv, __half* y, AttentionShape s) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  __shared__ __align__(16) Shared sh;
  const int first_query = static_cast<int>(blockIdx.x) * kQueries, head = static_cast<int>(blockIdx.y);
  const int image = static_cast<int>(blockIdx.z);
  const int width = 2 * kKeyDim + kHeadDim, channels = s.heads * width, base = head * width;
  const __half* x = qkv + static_cast<std::int64_t>(image) * s.pixels * channels;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  stage_rows(x, s.pixels, channels, first_query, kQueries, base, kKeyDim, &sh.q[0][0], kKeyPitch);
  __syncthreads();
  unsigned q[kKeyDim / 16][4];
#pragma unroll
  for (int k = 0; k < kKeyDim / 16; ++k) {
    const __half* top = &sh.q[warp * kRows + g][k * 16 + 2 * t];
    const __half* bottom = &sh.q[warp * kRows + g + 8][k * 16 + 2 * t];
    q[k][0] = two_halves(top);
    q[k][1] = two_halves(bottom);
    q[k][2] = two_halves(top + 8);
    q[k][3] = two_halves(bottom + 8);
  }
  const float scale_log2 = s.scale * kLog2e;
  RowState st;
  for (int first_key = 0; first_key < s.pixels; first_key += kChunk) {
    __syncthreads();  // the previous chunk is consumed
    stage_rows(x, s.pixels, channels, first_key, kChunk, base + kKeyDim, kKeyDim, &sh.k[0][0], kKeyPitch);
    stage_values(x, s.pixels, channels, first_key, base + 2 * kKeyDim, sh);
    __syncthreads();
    float scores[kChunk / 8][4];
    score_chunk(scores, q, sh, first_key, s.pixels, scale_log2);
    add_chunk(st, scores, sh);
  }
  const int out_channels = s.heads * kHeadDim;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int pixel = first_query + warp * kRows + g + 8 * r;
    const float inverse = 1.0f / quad_sum(st.sum[r]);
    if (pixel >= s.pixels) continue;
    __half* out = y + (static_cast<std::int64_t>(image) * s.pixels + pixel) * out_channels + head * kHeadDim;
#pragma unroll
    for (int c = 0; c < kHeadDim / 8; ++c) {
      *reinterpret_cast<__half2*>(out + c * 8 + 2 * t) =
          __floats2half2_rn(st.out[c][2 * r] * inverse, st.out[c][2 * r + 1] * inverse);
    }
  }
}

}  // namespace

bool attention_mma_fits(Elem e, const AttentionShape& s) {
  return e == Elem::kF16 && s.key_dim == kKeyDim && s.head_dim == kHeadDim;
}

bool attention_uses_mma(Elem e, const AttentionShape& s) {
  // Its blocks of 64 queries must fill the GPU (132 multiprocessors on the H200): fewer, and the
  // split-key kernel, which spreads one image's keys over many blocks, is faster.
  const std::int64_t blocks = static_cast<std::int64_t>((s.pixels + kQueries - 1) / kQueries) * s.heads * s.n;
  return attention_mma_fits(e, s) && blocks >= 132;
}

cudaError_t attention_mma(const void* qkv, void* y, Elem e, const AttentionShape& s, cudaStream_t stream) {
  if (!attention_mma_fits(e, s)) return cudaErrorInvalidValue;
  if (s.n == 0 || s.pixels == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((s.pixels + kQueries - 1) / kQueries), static_cast<unsigned>(s.heads),
                  static_cast<unsigned>(s.n));
  launch_early(attention_mma_kernel, grid, kThreads, 0, stream, static_cast<const __half*>(qkv),
               static_cast<__half*>(y), s);
  return cudaGetLastError();
}

}  // namespace kiln::cuda
