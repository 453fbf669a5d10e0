// squeeze_mlp_batched (see squeeze_mlp_batched_kernels.h). One cluster of kCluster thread blocks per image
// (Hopper's thread-block clusters): each block computes a slice of the hidden vector, the blocks exchange the
// slices through distributed shared memory, then each computes a slice of the outputs. Every weight is read
// once per image and the whole gate is one launch.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/device_math.cuh"
#include "backends/cuda/kernels/squeeze_mlp_batched_kernels.h"

namespace kiln::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kCluster = 8;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kSharedBytes = 48 * 1024;          // what a launch gets without opting in to more
constexpr std::int64_t kMaxWeights = 32 * 1024;  // see squeeze_mlp_batched_fits

int slice_of(int count) { return (count + kCluster - 1) / kCluster; }

std::size_t shared_bytes(int in, int hidden) {
  return static_cast<std::size_t>(in + slice_of(hidden) + hidden) * sizeof(float);
}

template <typename T>
__global__ void __cluster_dims__(kCluster, 1, 1) __launch_bounds__(kThreads)
    batched_gate_kernel(const T* x, const T* w1, const T* b1, Act act1, const T* w2, const T* b2, Act act2,
                        T* y, int in, int hidden, int out) {
  extern __shared__ float shared[];
  const int slice = (hidden + kCluster - 1) / kCluster;
  float* pooled = shared;      // [in]
  float* mine = pooled + in;   // [slice]: this block's part of the hidden vector
  float* full = mine + slice;  // [hidden]: every block's parts
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t image = blockIdx.y;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;

  for (int i = static_cast<int>(threadIdx.x); i < in; i += kThreads) pooled[i] = to_float(x[image * in + i]);
  __syncthreads();
  for (int j = warp; j < slice; j += kWarps) {
    const int unit = rank * slice + j;
    float sum = 0.0f;
    if (unit < hidden) {
      const T* row = w1 + static_cast<std::int64_t>(unit) * in;
      for (int i = lane; i < in; i += 32) sum += to_float(row[i]) * pooled[i];
      sum = warp_sum(sum);
    }
    if (lane == 0)
      mine[j] = unit < hidden ? to_float(from_float<T>(activate(sum + to_float(b1[unit]), act1))) : 0.0f;
  }
  cluster.sync();  // every slice written
  for (int k = static_cast<int>(threadIdx.x); k < hidden; k += kThreads) {
    const float* owner = cluster.map_shared_rank(mine, static_cast<unsigned>(k / slice));
    full[k] = owner[k % slice];
  }
  cluster.sync();  // every block done reading its peers' slices (none exits while another still reads)

  const int out_slice = (out + kCluster - 1) / kCluster;
  const int first = rank * out_slice, last = min(out, first + out_slice);
  for (int o = first + warp; o < last; o += kWarps) {
    const T* row = w2 + static_cast<std::int64_t>(o) * hidden;
    float sum = 0.0f;
    for (int k = lane; k < hidden; k += 32) sum += to_float(row[k]) * full[k];
    sum = warp_sum(sum);
    if (lane == 0) y[image * out + o] = from_float<T>(activate(sum + to_float(b2[o]), act2));
  }
}

template <typename T>
cudaError_t launch(const void* x, const void* w1, const void* b1, Act act1, const void* w2, const void* b2,
                   Act act2, void* y, int n, int in, int hidden, int out, cudaStream_t stream) {
  batched_gate_kernel<T>
      <<<dim3(kCluster, static_cast<unsigned>(n)), kThreads, shared_bytes(in, hidden), stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(w1), static_cast<const T*>(b1), act1,
          static_cast<const T*>(w2), static_cast<const T*>(b2), act2, static_cast<T*>(y), in, hidden, out);
  return cudaGetLastError();
}

}  // namespace

bool squeeze_mlp_batched_fits(int in, int hidden, int out) {
  const std::int64_t weights = static_cast<std::int64_t>(hidden) * (in + out);
  return in >= 1 && hidden >= 1 && out >= 1 && weights <= kMaxWeights &&
         shared_bytes(in, hidden) <= kSharedBytes;
}

cudaError_t squeeze_mlp_batched(const void* x, const void* w1, const void* b1, Act act1, const void* w2,
                                const void* b2, Act act2, void* y, Elem e, int n, int in, int hidden, int out,
                                cudaStream_t stream) {
  if (n < 1 || !squeeze_mlp_batched_fits(in, hidden, out)) return cudaErrorInvalidValue;
  return e == Elem::kF32 ? launch<float>(x, w1, b1, act1, w2, b2, act2, y, n, in, hidden, out, stream)
                         : launch<__half>(x, w1, b1, act1, w2, b2, act2, y, n, in, hidden, out, stream);
}

}  // namespace kiln::cuda
