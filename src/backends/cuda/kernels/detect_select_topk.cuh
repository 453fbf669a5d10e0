// The k largest of `count` 32-bit keys held in shared memory, for one block of kTopkThreads threads, ties
// to the lower position: detect_select's both stages run it on keys that order as core/ranking.h ranks.
// A radix select finds the k-th largest key T in three passes (digits of 11, 11 and 10 bits, one
// 2048-bin shared histogram, plain shared atomics: warp-aggregating them with __match_any_sync measured
// slower); a scan in position order takes every key above T and the lowest-positioned keys equal to T;
// each taken key is then placed by how many of the others outrank it. Every step reads shared memory
// only, with a fixed number of passes. A known lower bound on T (`floor`) lets the caller first compact
// the few keys at or above it (compact_at_least) and rank only those.
#pragma once

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"

namespace kiln::cuda::topk {

inline constexpr int kTopkThreads = 1024;
inline constexpr int kTopkBins = 2 * kTopkThreads;  // two bins per thread when choosing the bin

struct Scratch {
  std::uint32_t histogram[kTopkBins];
  std::uint32_t warp_sums[kTopkThreads / 32];
  std::uint32_t digit, remaining, gathered, total;
};

// The 64-bit key of a 32-bit key at a position: unique, and ordered as the key, then the lower position.
__device__ inline std::uint64_t positioned(std::uint32_t key, std::uint32_t position) {
  return (static_cast<std::uint64_t>(key) << 32) | (0xffffffffu - position);
}

__device__ inline std::uint32_t position_of(std::uint64_t key) {
  return 0xffffffffu - static_cast<std::uint32_t>(key);
}

// The sum of `v` over the threads before this one (thread order); every thread of the block calls it.
__device__ inline std::uint32_t block_exclusive_sum(std::uint32_t v, Scratch& sh) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  std::uint32_t inclusive = v;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const std::uint32_t lower = __shfl_up_sync(kFullWarp, inclusive, offset);
    if (lane >= offset) inclusive += lower;
  }
  if (lane == 31) sh.warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const std::uint32_t own = sh.warp_sums[lane];
    std::uint32_t sum = own;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const std::uint32_t lower = __shfl_up_sync(kFullWarp, sum, offset);
      if (lane >= offset) sum += lower;
    }
    sh.warp_sums[lane] = sum - own;
  }
  __syncthreads();
  const std::uint32_t result = sh.warp_sums[warp] + inclusive - v;
  __syncthreads();  // warp_sums is free again when the next call writes it
  return result;
}

// One digit of the radix select. Among the keys whose higher digits equal `prefix` (under `mask`), the
// bin of digit (key >> shift) holding the sh.remaining-th largest joins the prefix; sh.remaining becomes
// how many keys of that bin are still to take.
__device__ inline void select_digit(const std::uint32_t* keys, int count, std::uint32_t floor, int shift,
                                    int bits, std::uint32_t& prefix, std::uint32_t& mask, Scratch& sh) {
  const std::uint32_t digit_mask = (1u << bits) - 1;
  for (int b = static_cast<int>(threadIdx.x); b < kTopkBins; b += blockDim.x) sh.histogram[b] = 0;
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < count; i += blockDim.x) {
    const std::uint32_t key = keys[i];
    if (key >= floor && (key & mask) == prefix) atomicAdd(&sh.histogram[(key >> shift) & digit_mask], 1u);
  }
  __syncthreads();
  // Thread t holds bins 2047 - 2t and 2046 - 2t, so the sum over the threads before it counts the keys
  // in every higher bin.
  const int high = kTopkBins - 1 - 2 * static_cast<int>(threadIdx.x);
  const std::uint32_t in_high = sh.histogram[high], in_low = sh.histogram[high - 1];
  const std::uint32_t wanted = sh.remaining;
  const std::uint32_t above = block_exclusive_sum(in_high + in_low, sh);
  if (above < wanted && wanted <= above + in_high + in_low) {
    const bool high_bin = wanted <= above + in_high;
    sh.digit = static_cast<std::uint32_t>(high_bin ? high : high - 1);
    sh.remaining = wanted - (high_bin ? above : above + in_high);
  }
  __syncthreads();
  prefix |= sh.digit << shift;
  mask |= digit_mask << shift;
}

// Writes the keys above `threshold` and the `ties` lowest-positioned keys equal to it, positioned, to
// `out` in no particular order. Each thread walks one contiguous run of positions, so that a scan over
// the threads ranks the equal keys by position.
__device__ inline void gather_selected(const std::uint32_t* keys, const std::uint32_t* positions, int count,
                                       std::uint32_t threshold, std::uint32_t ties, std::uint64_t* out,
                                       Scratch& sh) {
  // An odd run length keeps the threads of a warp on different shared memory banks.
  const int run = ((count + static_cast<int>(blockDim.x) - 1) / static_cast<int>(blockDim.x)) | 1;
  const int begin = min(count, static_cast<int>(threadIdx.x) * run), end = min(count, begin + run);
  std::uint32_t equal = 0;
  for (int i = begin; i < end; ++i) equal += keys[i] == threshold ? 1u : 0u;
  std::uint32_t tie_rank = block_exclusive_sum(equal, sh);
  if (threadIdx.x == 0) sh.gathered = 0;
  __syncthreads();
  for (int i = begin; i < end; ++i) {
    const std::uint32_t key = keys[i];
    const bool take = key > threshold || (key == threshold && tie_rank++ < ties);
    const std::uint32_t position = positions ? positions[i] : static_cast<std::uint32_t>(i);
    if (take) out[atomicAdd(&sh.gathered, 1u)] = positioned(key, position);
  }
  __syncthreads();
}

// Copies the keys at or above `floor` and their positions to out_keys and out_positions, in position
// order, when there are at most `capacity` of them; returns how many there are. Each warp takes one
// contiguous range of positions, 32 at a time, so that its ballots place the keys in order.
__device__ inline int compact_at_least(const std::uint32_t* keys, int count, std::uint32_t floor,
                                       int capacity, std::uint32_t* out_keys, std::uint32_t* out_positions,
                                       Scratch& sh) {
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  const int span = (count + warps * 32 - 1) / (warps * 32) * 32;
  const int begin = min(count, warp * span), end = min(count, begin + span);
  std::uint32_t found = 0;
  for (int first = begin; first < end; first += 32) {
    const int i = first + lane;
    found += __popc(__ballot_sync(kFullWarp, i < end && keys[i] >= floor));
  }
  // Lane 0 holds its warp's count; the last thread, with nothing of its own, sees the whole total.
  std::uint32_t base = block_exclusive_sum(lane == 0 ? found : 0u, sh);
  if (threadIdx.x == blockDim.x - 1) sh.total = base;
  base = __shfl_sync(kFullWarp, base, 0);
  __syncthreads();
  const int total = static_cast<int>(sh.total);
  if (total <= capacity) {
    for (int first = begin; first < end; first += 32) {
      const int i = first + lane;
      const std::uint32_t key = i < end ? keys[i] : 0;
      const bool keep = i < end && key >= floor;
      const unsigned kept = __ballot_sync(kFullWarp, keep);
      if (keep) {
        const std::uint32_t at = base + __popc(kept & ((1u << lane) - 1));
        out_keys[at] = key;
        out_positions[at] = static_cast<std::uint32_t>(i);
      }
      base += __popc(kept);
    }
  }
  __syncthreads();
  return total;
}

// Sorts the k unique keys of `in` descending into `out`: each key's place is the number of keys above
// it. Several threads share one key's count when k is below the block size.
__device__ inline void sort_by_rank(const std::uint64_t* in, int k, std::uint64_t* out, std::uint32_t* rank) {
  for (int i = static_cast<int>(threadIdx.x); i < k; i += blockDim.x) rank[i] = 0;
  __syncthreads();
  const int parts = max(1, static_cast<int>(blockDim.x) / k);
  for (int t = static_cast<int>(threadIdx.x); t < k * parts; t += blockDim.x) {
    const int i = t % k, part = t / k;
    const std::uint64_t own = in[i];
    std::uint32_t above = 0;
    for (int j = part * k / parts; j < (part + 1) * k / parts; ++j) above += in[j] > own ? 1u : 0u;
    atomicAdd(&rank[i], above);
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < k; i += blockDim.x) out[rank[i]] = in[i];
  __syncthreads();
}

// The k largest keys of keys[0 .. count), positioned (by positions[i], in increasing order, or by i when
// positions is null), best first in `sorted`; returns the k-th largest key. Only keys at or above `floor`
// are looked at: at least k of them must be there. `gathered` and `rank` are scratch of k entries.
// Every thread of the block calls it.
__device__ inline std::uint32_t top_k(const std::uint32_t* keys, const std::uint32_t* positions, int count,
                                      int k, std::uint32_t floor, std::uint64_t* gathered,
                                      std::uint32_t* rank, std::uint64_t* sorted, Scratch& sh) {
  if (threadIdx.x == 0) sh.remaining = static_cast<std::uint32_t>(k);
  std::uint32_t prefix = 0, mask = 0;
  select_digit(keys, count, floor, 21, 11, prefix, mask, sh);
  select_digit(keys, count, floor, 10, 11, prefix, mask, sh);
  select_digit(keys, count, floor, 0, 10, prefix, mask, sh);
  // prefix is now the k-th largest key, and sh.remaining how many keys equal to it are taken.
  gather_selected(keys, positions, count, prefix, sh.remaining, gathered, sh);
  sort_by_rank(gathered, k, sorted, rank);
  return prefix;
}

}  // namespace kiln::cuda::topk
