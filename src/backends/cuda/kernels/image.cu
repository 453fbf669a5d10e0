// Image preprocessing kernels (see image_kernels.h). Integer arithmetic as the CPU path's, so the
// bytes agree exactly; the float steps use round-to-nearest intrinsics so that nvcc cannot contract
// them into a fused multiply-add the CPU path does not do.
#include <cstdint>

#include "backends/cuda/kernels/image_kernels.h"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

constexpr int kPrecisionBits = 22;  // io/resample_tables.h: kResamplePrecisionBits
constexpr int kLinearBits = 11;     // io/resample_tables.h: kLinearCoefBits

__device__ inline std::uint8_t clip8(std::int32_t accumulator) {
  return static_cast<std::uint8_t>(min(max(accumulator >> kPrecisionBits, 0), 255));
}

__global__ void resample_rows_kernel(const std::uint8_t* image, int width, int row_begin, int rows,
                                     ResampleTable columns, std::uint8_t* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t total = static_cast<std::int64_t>(rows) * columns.count * 3;
  if (i >= total) return;
  const int c = static_cast<int>(i % 3);
  const int x = static_cast<int>((i / 3) % columns.count);
  const int y = static_cast<int>(i / (3 * static_cast<std::int64_t>(columns.count)));
  const std::uint8_t* src =
      image + (static_cast<std::int64_t>(row_begin + y) * width + columns.start[x]) * 3 + c;
  const std::int32_t* k = columns.weights + static_cast<std::int64_t>(x) * columns.taps;
  std::int32_t acc = std::int32_t{1} << (kPrecisionBits - 1);
  for (int t = 0; t < columns.length[x]; ++t) acc += static_cast<std::int32_t>(src[3 * t]) * k[t];
  out[i] = clip8(acc);
}

__device__ inline float normalized(std::uint8_t v, float mean, float stdev) {
  return __fdiv_rn(__fsub_rn(__fdiv_rn(static_cast<float>(v), 255.0f), mean), stdev);
}

__global__ void resample_columns_normalize_kernel(const std::uint8_t* rows_in, int width, int row_offset,
                                                  ResampleTable rows, Normalize normalize, float* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t plane = static_cast<std::int64_t>(rows.count) * width;
  if (i >= plane * 3) return;
  const int c = static_cast<int>(i / plane);
  const int y = static_cast<int>((i % plane) / width);
  const int x = static_cast<int>(i % width);
  const std::uint8_t* src =
      rows_in + (static_cast<std::int64_t>(rows.start[y] - row_offset) * width + x) * 3 + c;
  const std::int32_t* k = rows.weights + static_cast<std::int64_t>(y) * rows.taps;
  std::int32_t acc = std::int32_t{1} << (kPrecisionBits - 1);
  for (int t = 0; t < rows.length[y]; ++t) {
    acc += static_cast<std::int32_t>(src[static_cast<std::int64_t>(t) * width * 3]) * k[t];
  }
  out[i] = normalized(clip8(acc), normalize.mean[c], normalize.std[c]);
}

// One horizontally resized value of OpenCV's linear path (not yet rounded: weights sum to 2^11).
__device__ inline int linear_row_value(const LetterboxArgs& a, int y, const std::int32_t* tap, int c) {
  const std::uint8_t* row = a.image + static_cast<std::int64_t>(min(max(y, 0), a.height - 1)) * a.width * 3;
  const int next = min(tap[0] + 1, a.width - 1);
  return row[tap[0] * 3 + c] * tap[1] + row[next * 3 + c] * tap[2];
}

__global__ void letterbox_kernel(LetterboxArgs a, float* out) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  const std::int64_t plane = static_cast<std::int64_t>(a.size) * a.size;
  if (i >= plane * 3) return;
  const int c = static_cast<int>(i / plane);
  const int y = static_cast<int>((i % plane) / a.size) - a.top;
  const int x = static_cast<int>(i % a.size) - a.left;
  int value = a.fill;
  if (x >= 0 && x < a.scaled_width && y >= 0 && y < a.scaled_height) {
    const std::int32_t* xt = a.x_taps + 3 * x;
    const std::int32_t* yt = a.y_taps + 3 * y;
    const int s0 = linear_row_value(a, yt[0], xt, c), s1 = linear_row_value(a, yt[0] + 1, xt, c);
    // OpenCV's vectorised 8-bit vertical pass: ((S0 >> 4) * b0 >> 16) + ((S1 >> 4) * b1 >> 16), + 2 >> 2.
    const int v = (((s0 >> 4) * yt[1]) >> 16) + (((s1 >> 4) * yt[2]) >> 16);
    value = min(max((v + 2) >> 2, 0), 255);
  }
  out[i] = __fdiv_rn(static_cast<float>(value), 255.0f);
}

static_assert(kLinearBits == 11, "the vertical pass's shifts assume 11-bit weights");

}  // namespace

cudaError_t resample_rows(const std::uint8_t* image, int width, int row_begin, int rows,
                          ResampleTable columns, std::uint8_t* out, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(rows) * columns.count * 3;
  if (total == 0) return cudaSuccess;
  resample_rows_kernel<<<blocks_for(total), kBlock, 0, stream>>>(image, width, row_begin, rows, columns, out);
  return cudaGetLastError();
}

cudaError_t resample_columns_normalize(const std::uint8_t* rows_in, int width, int row_offset,
                                       ResampleTable rows, Normalize normalize, float* out,
                                       cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(rows.count) * width * 3;
  if (total == 0) return cudaSuccess;
  resample_columns_normalize_kernel<<<blocks_for(total), kBlock, 0, stream>>>(rows_in, width, row_offset,
                                                                              rows, normalize, out);
  return cudaGetLastError();
}

cudaError_t letterbox_normalize(const LetterboxArgs& args, float* out, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(args.size) * args.size * 3;
  if (total == 0) return cudaSuccess;
  letterbox_kernel<<<blocks_for(total), kBlock, 0, stream>>>(args, out);
  return cudaGetLastError();
}

}  // namespace kiln::cuda
