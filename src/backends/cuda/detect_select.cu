// YOLOv10's two-stage top-k (see detect_select_kernels.h). Every candidate gets a unique 64-bit key that
// orders exactly as core/ranking.h ranks: the score's bits mapped to an unsigned order (NaN lowest, -0 equal
// to +0) above the complement of its index (ties to the lower index). One block per image then finds the
// k-th largest key by radix select (at most eight passes of 8 bits: it stops at the first digit whose
// chosen bin is taken whole, often within the score's bits), gathers the k keys at or above it and sorts
// them in shared memory; the set and its order depend on the keys only, so the result is deterministic.
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/detect_select_kernels.h"
#include "backends/cuda/device_math.cuh"
#include "backends/cuda/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

constexpr int kSelectThreads = 1024;
constexpr int kRadixBins = 256;

// Larger score, larger key; every NaN 0, below -inf's key; -0 and +0 one key.
__device__ inline std::uint32_t score_key(float v) {
  std::uint32_t bits = __float_as_uint(v);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0;
  if ((bits << 1) == 0) bits = 0;
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

__device__ inline std::uint64_t rank_key(std::uint32_t score, std::uint32_t index) {
  return (static_cast<std::uint64_t>(score) << 32) | (0xffffffffu - index);
}

__device__ inline std::uint32_t index_of(std::uint64_t key) {
  return 0xffffffffu - static_cast<std::uint32_t>(key);
}

// Per anchor, the key of its best class score as the reference's running maximum (std::max) takes it: a
// NaN first score stays, a later NaN is passed over. That is the first score when it is NaN, else the
// NaN-ignoring maximum of all scores (fmaxf), which any order of reduction reaches: so one warp per anchor
// reads the row together. -0 and +0 share a key, so which of them fmaxf keeps does not matter.
template <typename T>
__global__ void best_score_keys(const T* x, std::uint32_t* keys, std::int64_t rows, int classes) {
  const std::int64_t row = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  if (row >= rows) return;  // the whole warp: blocks are whole warps
  const T* scores = x + row * (4 + classes) + 4;
  float best = -INFINITY;
  for (int c = lane; c < classes; c += 32) best = fmaxf(best, to_float(scores[c]));
  best = warp_max(best);
  if (lane == 0) {
    const float first = to_float(scores[0]);
    keys[row] = score_key(isnan(first) ? first : best);
  }
}

struct SelectShared {
  std::uint64_t sorted[kDetectSelectMaxDet];  // the selected keys, best first
  std::uint32_t kept[kDetectSelectMaxDet];    // stage 1's anchors, best first
  std::uint32_t histogram[kRadixBins];
  std::uint32_t digit, remaining, gathered;
  bool whole_bin;  // the chosen bin's keys are all taken: no lower digit changes the selection
};

// Warp 0: the bin holding the `sh.remaining`-th largest key of the histogram, and how many keys of it
// are still to take.
__device__ void choose_bin(SelectShared& sh) {
  const int lane = static_cast<int>(threadIdx.x);
  constexpr int kPerLane = kRadixBins / 32;
  const std::uint32_t wanted = sh.remaining;
  __syncwarp();  // every lane has read it before one lane overwrites it
  std::uint32_t own = 0;
  for (int b = 0; b < kPerLane; ++b) own += sh.histogram[lane * kPerLane + b];
  std::uint32_t from_here = own;  // keys in this lane's bins and every higher one
  for (int offset = 1; offset < 32; offset <<= 1) {
    const std::uint32_t higher = __shfl_down_sync(0xffffffffu, from_here, offset);
    if (lane + offset < 32) from_here += higher;
  }
  std::uint32_t above = from_here - own;
  if (above >= wanted || from_here < wanted) return;
  for (int b = kPerLane - 1; b >= 0; --b) {
    const std::uint32_t count = sh.histogram[lane * kPerLane + b];
    if (above + count >= wanted) {
      sh.digit = static_cast<std::uint32_t>(lane * kPerLane + b);
      sh.remaining = wanted - above;
      sh.whole_bin = above + count == wanted;
      return;
    }
    above += count;
  }
}

// Counts the keys (key & mask) == prefix into their bins of digit `shift`. Every thread of the block
// takes the same number of turns, so that the lanes of a warp whose keys share a bin add them with one
// atomic (scores crowd into few bins of the top digits, where one atomic per key would serialise).
template <typename KeyOf>
__device__ void count_digits(KeyOf key_of, int count, std::uint64_t prefix, std::uint64_t mask, int shift,
                             SelectShared& sh) {
  for (int first = 0; first < count; first += static_cast<int>(blockDim.x)) {
    const int i = first + static_cast<int>(threadIdx.x);
    const std::uint64_t key = i < count ? key_of(i) : 0;
    const bool counts = i < count && (key & mask) == prefix;
    const unsigned counting = __ballot_sync(kFullWarp, counts);
    if (counts) {
      const unsigned bin = static_cast<unsigned>(key >> shift) & 0xffu;
      const unsigned peers = __match_any_sync(counting, bin);  // the counting lanes, all of them here
      if (static_cast<int>(threadIdx.x % 32) == __ffs(static_cast<int>(peers)) - 1)
        atomicAdd(&sh.histogram[bin], static_cast<std::uint32_t>(__popc(peers)));
    }
  }
}

// The `k` largest of the keys key_of(0 .. count), sorted descending into sh.sorted (k <= count).
template <typename KeyOf>
__device__ void select_largest(KeyOf key_of, int count, int k, SelectShared& sh) {
  std::uint64_t prefix = 0, mask = 0;
  if (threadIdx.x == 0) sh.remaining = static_cast<std::uint32_t>(k);
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = static_cast<int>(threadIdx.x); b < kRadixBins; b += blockDim.x) sh.histogram[b] = 0;
    __syncthreads();
    count_digits(key_of, count, prefix, mask, shift, sh);
    __syncthreads();
    if (threadIdx.x < 32) choose_bin(sh);
    __syncthreads();
    prefix |= static_cast<std::uint64_t>(sh.digit) << shift;
    mask |= std::uint64_t{0xff} << shift;
    // Every key of the chosen bin is taken and none below it: the keys at or above `prefix` (its lower
    // digits 0) are already exactly the k largest.
    if (sh.whole_bin) break;
  }
  // Exactly k keys are at or above `prefix` (the k-th largest key, or a bound just below the chosen bin).
  int size = 1;
  while (size < k) size <<= 1;
  if (threadIdx.x == 0) sh.gathered = 0;
  for (int i = static_cast<int>(threadIdx.x); i < size; i += blockDim.x) sh.sorted[i] = 0;
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < count; i += blockDim.x) {
    const std::uint64_t key = key_of(i);
    if (key >= prefix) sh.sorted[atomicAdd(&sh.gathered, 1u)] = key;
  }
  __syncthreads();
  // Bitonic sort, descending; the zero padding sorts below every real key.
  for (int run = 2; run <= size; run <<= 1) {
    for (int stride = run >> 1; stride > 0; stride >>= 1) {
      for (int i = static_cast<int>(threadIdx.x); i < size; i += blockDim.x) {
        const int partner = i ^ stride;
        if (partner <= i) continue;
        const std::uint64_t a = sh.sorted[i], b = sh.sorted[partner];
        const bool descending = (i & run) == 0;
        if (descending ? a < b : a > b) {
          sh.sorted[i] = b;
          sh.sorted[partner] = a;
        }
      }
      __syncthreads();
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kSelectThreads)
    select_kernel(const T* x, const std::uint32_t* best_keys, T* y, DetectSelectShape s) {
  __shared__ SelectShared sh;
  const int n = static_cast<int>(blockIdx.x), channels = 4 + s.classes, k = s.max_det;
  const T* image = x + static_cast<std::int64_t>(n) * s.anchors * channels;
  const std::uint32_t* keys = best_keys + static_cast<std::int64_t>(n) * s.anchors;
  select_largest([&](int a) { return rank_key(keys[a], static_cast<std::uint32_t>(a)); }, s.anchors, k, sh);
  for (int r = static_cast<int>(threadIdx.x); r < k; r += blockDim.x) sh.kept[r] = index_of(sh.sorted[r]);
  __syncthreads();
  // Stage 2 over the kept anchors' scores, flattened kept slot major, class minor.
  const auto class_score = [&](int flat) {
    return to_float(
        image[static_cast<std::int64_t>(sh.kept[flat / s.classes]) * channels + 4 + flat % s.classes]);
  };
  select_largest(
      [&](int flat) { return rank_key(score_key(class_score(flat)), static_cast<std::uint32_t>(flat)); },
      k * s.classes, k, sh);
  T* out = y + static_cast<std::int64_t>(n) * 6 * k;
  for (int r = static_cast<int>(threadIdx.x); r < k; r += blockDim.x) {
    const int flat = static_cast<int>(index_of(sh.sorted[r]));
    const T* box = image + static_cast<std::int64_t>(sh.kept[flat / s.classes]) * channels;
    const float cx = to_float(box[0]), cy = to_float(box[1]);
    // Explicit roundings: no contraction into an FMA, so each value rounds as the reference's does.
    const float half_w = __fmul_rn(to_float(box[2]), 0.5f), half_h = __fmul_rn(to_float(box[3]), 0.5f);
    const float row[6] = {__fsub_rn(cx, half_w), __fsub_rn(cy, half_h), __fadd_rn(cx, half_w),
                          __fadd_rn(cy, half_h), class_score(flat),     static_cast<float>(flat % s.classes)};
    for (int field = 0; field < 6; ++field) out[field * k + r] = from_float<T>(row[field]);
  }
}

template <typename T>
cudaError_t launch(const T* x, T* y, std::uint32_t* keys, const DetectSelectShape& s, cudaStream_t stream) {
  const std::int64_t rows = static_cast<std::int64_t>(s.n) * s.anchors;
  best_score_keys<T><<<blocks_for(rows * 32), kBlock, 0, stream>>>(x, keys, rows, s.classes);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  select_kernel<T><<<static_cast<unsigned>(s.n), kSelectThreads, 0, stream>>>(x, keys, y, s);
  return cudaGetLastError();
}

}  // namespace

std::size_t detect_select_workspace_bytes(const DetectSelectShape& s) {
  return static_cast<std::size_t>(s.n) * static_cast<std::size_t>(s.anchors) * sizeof(std::uint32_t);
}

cudaError_t detect_select(const void* x, void* y, void* workspace, Elem e, const DetectSelectShape& s,
                          cudaStream_t stream) {
  if (s.n == 0) return cudaSuccess;
  auto* keys = static_cast<std::uint32_t*>(workspace);
  if (e == Elem::kF32) return launch(static_cast<const float*>(x), static_cast<float*>(y), keys, s, stream);
  return launch(static_cast<const __half*>(x), static_cast<__half*>(y), keys, s, stream);
}

}  // namespace kiln::cuda
