// Launch configuration and 16-byte channel access shared by kiln's NHWC kernels. They are memory-bound:
// each thread moves 16 bytes of channels at a time when the channel count allows it (8 fp16 or 4 f32
// values), reads each input once and computes in f32. Every kernel is instantiated for f32 and fp16 only,
// to keep compile times short.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/kernel_types.h"
#include "backends/cuda/kernels/launch_context.h"

namespace kiln::cuda {

constexpr int kBlock = 256;

// Values per 16-byte access.
template <typename T>
constexpr int kPack = 16 / static_cast<int>(sizeof(T));

template <typename T, int V>
__device__ inline void load(const T* p, float (&out)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(e[i]);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = to_float(p[i]);
  }
}

// A pack of V values as stored (16-byte loads where the pack is 16 bytes), for kernels that hold many
// packs in flight and convert them later.
template <typename T, int V>
__device__ inline void load_raw(const T* p, T (&out)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(p);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = p[i];
  }
}

template <typename T, int V>
__device__ inline void store(T* p, const float (&in)[V]) {
  if constexpr (V * sizeof(T) == 16) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < V; ++i) e[i] = from_float<T>(in[i]);
    *reinterpret_cast<uint4*>(p) = raw;
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = from_float<T>(in[i]);
  }
}

inline unsigned blocks_for(std::int64_t threads) {
  return static_cast<unsigned>((threads + kBlock - 1) / kBlock);
}

// Early launch (Hopper's programmatic dependent launch). A kernel launched with launch_early() may be
// scheduled before the kernel ahead of it in the stream has finished: as soon as each block of that one
// has passed start_after_previous_kernel() or exited. So that the order of memory effects stays the
// stream's, the kernel's first statement is start_after_previous_kernel(), which returns once the kernel
// ahead has finished and its writes are visible (at once where there was no early launch); what overlaps
// is the launch itself, which at batch 1 costs about as much as a small kernel's work. On by default;
// the early-launch option turns it off (cuda_options.h), through the launching thread's LaunchContext.
__device__ inline void start_after_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // Only now may the kernel behind this one be scheduled: its blocks then take the slots of this kernel's
  // last wave rather than competing with its earlier ones.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, shared, stream>>>(args...), launched early where the launch context allows it.
// The kernel must begin with start_after_previous_kernel().
template <typename... Params, typename... Args>
cudaError_t launch_early(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared,
                         cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute early[1];
  early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  config.attrs = early;
  config.numAttrs = launch_context().early_launch ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

// The element type and pack width a launch is instantiated for.
template <typename T, int V>
struct Kind {
  using type = T;
  static constexpr int pack = V;
};

// Calls launch(Kind<T, V>{}) with the element type and the widest pack `channels` allows.
template <typename Launch>
cudaError_t dispatch(Elem e, std::int64_t channels, Launch launch) {
  if (e == Elem::kF32) {
    if (channels % kPack<float> == 0) return launch(Kind<float, kPack<float>>{});
    return launch(Kind<float, 1>{});
  }
  if (channels % kPack<__half> == 0) return launch(Kind<__half, kPack<__half>>{});
  return launch(Kind<__half, 1>{});
}

}  // namespace kiln::cuda
