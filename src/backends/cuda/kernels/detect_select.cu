// YOLOv10's two-stage top-k (see detect_select_kernels.h). Every candidate gets a unique 64-bit key that
// orders exactly as core/ranking.h ranks: the score's bits mapped to an unsigned order (NaN lowest, -0 equal
// to +0) above the complement of its index (ties to the lower index). One kernel over the whole batch takes
// each anchor's best score; then one block per image selects. When an image's keys fit in shared memory
// (YOLOv10's 8400 anchors and 300 x 80 pairs do), both stages run detect_select_topk.cuh's shared-memory
// top-k, reading each stage's scores from global memory once. Larger shapes take the general kernel: it
// finds the k-th largest key by radix select over global memory (at most eight passes of 8 bits), gathers
// the k keys at or above it and sorts them with a bitonic sort. Either way the set and its order depend on
// the keys only, so the result is deterministic and the same.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

#include "backends/cuda/kernels/detect_select_kernels.h"
#include "backends/cuda/kernels/detect_select_topk.cuh"
#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_launch.cuh"

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
// NaN-ignoring maximum of all scores (fmaxf), which any order of reduction reaches: so eight lanes per
// anchor read the row together (a warp per anchor left too few loads in flight per warp). -0 and +0 share
// a key, so which of them fmaxf keeps does not matter.
constexpr int kLanesPerAnchor = 8;

template <typename T>
__global__ void best_score_keys(const T* x, std::uint32_t* keys, std::int64_t rows, int classes) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const std::int64_t row =
      (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / kLanesPerAnchor;
  const int lane = static_cast<int>(threadIdx.x % kLanesPerAnchor);
  // Lanes past the last row still take part in the shuffles.
  const bool active = row < rows;
  const T* scores = x + (active ? row : 0) * (4 + classes) + 4;
  float best = -INFINITY;
  if (active) {
#pragma unroll 4
    for (int c = lane; c < classes; c += kLanesPerAnchor) best = fmaxf(best, to_float(scores[c]));
  }
  for (int offset = kLanesPerAnchor / 2; offset > 0; offset /= 2)
    best = fmaxf(best, __shfl_xor_sync(kFullWarp, best, offset));
  if (active && lane == 0) {
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

// Writes detection r of an image: the box of anchor `anchor` and the score of class `label`. Rows past the
// last detection (only when anchors x classes < max_det) are zero.
template <typename T>
__device__ void write_detection(const T* image, int channels, int anchor, int label, T* out, int max_det,
                                int r) {
  if (anchor < 0) {
    for (int field = 0; field < 6; ++field) out[field * max_det + r] = from_float<T>(0.0f);
    return;
  }
  const T* box = image + static_cast<std::int64_t>(anchor) * channels;
  const float cx = to_float(box[0]), cy = to_float(box[1]);
  // Explicit roundings: no contraction into an FMA, so each value rounds as the reference's does.
  const float half_w = __fmul_rn(to_float(box[2]), 0.5f), half_h = __fmul_rn(to_float(box[3]), 0.5f);
  const float row[6] = {__fsub_rn(cx, half_w), __fsub_rn(cy, half_h),    __fadd_rn(cx, half_w),
                        __fadd_rn(cy, half_h), to_float(box[4 + label]), static_cast<float>(label)};
  for (int field = 0; field < 6; ++field) out[field * max_det + r] = from_float<T>(row[field]);
}

// The general kernel: both stages by radix select over global memory.
template <typename T>
__global__ void __launch_bounds__(kSelectThreads)
    select_kernel(const T* x, const std::uint32_t* best_keys, T* y, DetectSelectShape s) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  __shared__ SelectShared sh;
  const int n = static_cast<int>(blockIdx.x), channels = 4 + s.classes;
  const int kept_count = min(s.max_det, s.anchors), pairs = kept_count * s.classes, k = min(s.max_det, pairs);
  const T* image = x + static_cast<std::int64_t>(n) * s.anchors * channels;
  const std::uint32_t* keys = best_keys + static_cast<std::int64_t>(n) * s.anchors;
  select_largest([&](int a) { return rank_key(keys[a], static_cast<std::uint32_t>(a)); }, s.anchors,
                 kept_count, sh);
  for (int r = static_cast<int>(threadIdx.x); r < kept_count; r += blockDim.x)
    sh.kept[r] = index_of(sh.sorted[r]);
  __syncthreads();
  // Stage 2 over the kept anchors' scores, flattened kept slot major, class minor.
  const auto class_score = [&](int flat) {
    return to_float(
        image[static_cast<std::int64_t>(sh.kept[flat / s.classes]) * channels + 4 + flat % s.classes]);
  };
  select_largest(
      [&](int flat) { return rank_key(score_key(class_score(flat)), static_cast<std::uint32_t>(flat)); },
      pairs, k, sh);
  T* out = y + static_cast<std::int64_t>(n) * 6 * s.max_det;
  for (int r = static_cast<int>(threadIdx.x); r < s.max_det; r += blockDim.x) {
    const int flat = r < k ? static_cast<int>(index_of(sh.sorted[r])) : -1;
    const int anchor = flat < 0 ? -1 : static_cast<int>(sh.kept[flat / s.classes]);
    write_detection(image, channels, anchor, flat < 0 ? 0 : flat % s.classes, out, s.max_det, r);
  }
}

// The fast kernel's dynamic shared memory: k entries each of gathered and sorted keys (64-bit), ranks and
// kept anchors (32-bit), room for `candidates` stage 2 keys at or above stage 1's threshold and their
// positions, then the keys of the larger stage.
struct SharedLayout {
  int k, candidates, keys;
  std::size_t bytes() const {
    return static_cast<std::size_t>(k) * (2 * sizeof(std::uint64_t) + 2 * sizeof(std::uint32_t)) +
           static_cast<std::size_t>(2 * candidates + keys) * sizeof(std::uint32_t);
  }
};

// sm_90's largest shared memory per block (227 KiB), less the static Scratch.
constexpr std::size_t kSharedLimit = 232448 - sizeof(topk::Scratch);
// Stage 2's candidates are typically about max_det: room for a few times that.
constexpr int kMostCandidates = 4096;

SharedLayout shared_layout(const DetectSelectShape& s) {
  const int kept_count = std::min(s.max_det, s.anchors);
  SharedLayout layout{s.max_det, 0, std::max(s.anchors, kept_count * s.classes)};
  const std::size_t left = layout.bytes() < kSharedLimit ? kSharedLimit - layout.bytes() : 0;
  layout.candidates =
      static_cast<int>(std::min<std::size_t>(kMostCandidates, left / (2 * sizeof(std::uint32_t))));
  return layout;
}

// Loads in flight per thread while filling the shared keys.
constexpr int kInFlight = 8;

// Copies stage 1's keys of one image to shared memory.
__device__ void fill_anchor_keys(const std::uint32_t* image_keys, int anchors, std::uint32_t* keys) {
  const int stride = static_cast<int>(blockDim.x);
  for (int first = static_cast<int>(threadIdx.x); first < anchors; first += kInFlight * stride) {
    std::uint32_t v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j)
      v[j] = first + j * stride < anchors ? image_keys[first + j * stride] : 0;
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      if (first + j * stride < anchors) keys[first + j * stride] = v[j];
    }
  }
  __syncthreads();
}

// Stage 2's keys, flattened kept slot major, class minor. Each thread steps its slot and class along
// instead of dividing every flat index by the class count.
template <typename T>
__device__ void fill_pair_keys(const T* image, int channels, const std::uint32_t* kept, int kept_count,
                               int classes, std::uint32_t* keys) {
  const int stride = static_cast<int>(blockDim.x), pairs = kept_count * classes;
  const int slot_step = stride / classes, class_step = stride % classes;
  int slot = static_cast<int>(threadIdx.x) / classes, c = static_cast<int>(threadIdx.x) % classes;
  for (int first = static_cast<int>(threadIdx.x); first < pairs; first += kInFlight * stride) {
    float v[kInFlight];
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      v[j] = first + j * stride < pairs
                 ? to_float(image[static_cast<std::int64_t>(kept[slot]) * channels + 4 + c])
                 : 0.0f;
      slot += slot_step;
      c += class_step;
      if (c >= classes) {
        c -= classes;
        ++slot;
      }
    }
#pragma unroll
    for (int j = 0; j < kInFlight; ++j) {
      if (first + j * stride < pairs) keys[first + j * stride] = score_key(v[j]);
    }
  }
  __syncthreads();
}

// The fast kernel: each stage's keys in shared memory (see detect_select_topk.cuh).
template <typename T>
__global__ void __launch_bounds__(topk::kTopkThreads)
    select_in_shared(const T* x, const std::uint32_t* best_keys, T* y, DetectSelectShape s,
                     SharedLayout layout) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  __shared__ topk::Scratch sh;
  extern __shared__ std::uint64_t dynamic[];
  const int n = static_cast<int>(blockIdx.x), channels = 4 + s.classes;
  const int kept_count = min(s.max_det, s.anchors), pairs = kept_count * s.classes, k = min(s.max_det, pairs);
  std::uint64_t* gathered = dynamic;
  std::uint64_t* sorted = gathered + layout.k;
  std::uint32_t* rank = reinterpret_cast<std::uint32_t*>(sorted + layout.k);
  std::uint32_t* kept = rank + layout.k;
  std::uint32_t* candidate_keys = kept + layout.k;
  std::uint32_t* candidate_positions = candidate_keys + layout.candidates;
  std::uint32_t* keys = candidate_positions + layout.candidates;
  const T* image = x + static_cast<std::int64_t>(n) * s.anchors * channels;
  const std::uint32_t* image_keys = best_keys + static_cast<std::int64_t>(n) * s.anchors;
  fill_anchor_keys(image_keys, s.anchors, keys);
  const std::uint32_t kth_best =
      topk::top_k(keys, nullptr, s.anchors, kept_count, 0, gathered, rank, sorted, sh);
  for (int r = static_cast<int>(threadIdx.x); r < kept_count; r += blockDim.x)
    kept[r] = topk::position_of(sorted[r]);
  __syncthreads();
  fill_pair_keys(image, channels, kept, kept_count, s.classes, keys);
  // Each kept anchor has a pair that scores its best (its best is its first score, NaN, only when stage 1's
  // k-th best key is NaN's 0), so when k <= kept_count no pair below that key is taken: the few pairs at
  // or above it, kept in position order, are all stage 2 has to rank.
  const std::uint32_t kept_floor = k <= kept_count ? kth_best : 0;
  const int above = topk::compact_at_least(keys, pairs, kept_floor, layout.candidates, candidate_keys,
                                           candidate_positions, sh);
  if (above <= layout.candidates)
    topk::top_k(candidate_keys, candidate_positions, above, k, kept_floor, gathered, rank, sorted, sh);
  else
    topk::top_k(keys, nullptr, pairs, k, kept_floor, gathered, rank, sorted, sh);
  T* out = y + static_cast<std::int64_t>(n) * 6 * s.max_det;
  for (int r = static_cast<int>(threadIdx.x); r < s.max_det; r += blockDim.x) {
    const int flat = r < k ? static_cast<int>(topk::position_of(sorted[r])) : -1;
    const int anchor = flat < 0 ? -1 : static_cast<int>(kept[flat / s.classes]);
    write_detection(image, channels, anchor, flat < 0 ? 0 : flat % s.classes, out, s.max_det, r);
  }
}

template <typename T>
cudaError_t launch(const T* x, T* y, std::uint32_t* keys, const DetectSelectShape& s, cudaStream_t stream) {
  const std::int64_t rows = static_cast<std::int64_t>(s.n) * s.anchors;
  launch_early(best_score_keys<T>, blocks_for(rows * kLanesPerAnchor), kBlock, 0, stream, x, keys, rows,
               s.classes);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const SharedLayout layout = shared_layout(s);
  const std::size_t bytes = layout.bytes();
  if (bytes > kSharedLimit) {
    launch_early(select_kernel<T>, static_cast<unsigned>(s.n), kSelectThreads, 0, stream, x, keys, y, s);
    return cudaGetLastError();
  }
  // Above 48 KiB of dynamic shared memory a kernel must opt in; the attribute is set per launch (a host
  // call, no stream work) so that it holds on whichever device runs it.
  if (const cudaError_t e = cudaFuncSetAttribute(
          select_in_shared<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
      e != cudaSuccess)
    return e;
  launch_early(select_in_shared<T>, static_cast<unsigned>(s.n), topk::kTopkThreads, bytes, stream, x, keys, y,
               s, layout);
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
