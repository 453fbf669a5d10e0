// The data movement kernels (see data_movement_kernels.h). Each thread moves one word: 16 bytes where
// every extent, offset and address allows it, else one element.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "backends/cuda/kernels/data_movement_kernels.h"
#include "backends/cuda/kernels/kernel_launch.cuh"

namespace kiln::cuda {
namespace {

// Sources one launch gathers from; a gather with more runs in several launches.
constexpr int kMaxSources = 8;

// One launch's sources, in words. `end` is the last source's dst_offset + width.
struct SourceTable {
  const void* src[kMaxSources];
  std::int64_t src_pitch[kMaxSources];
  std::int64_t dst_offset[kMaxSources];
  std::int64_t end;
  int count;
};

// One thread per output word of columns [table.dst_offset[0], table.end) of every row. Index is the
// type of every word index: 32 bits where all of them fit (a 64-bit division costs a memory-bound copy
// more time than its memory traffic), else 64.
template <typename W, typename Index>
__global__ void gather_columns_kernel(SourceTable table, W* y, Index rows, Index y_pitch) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const auto first = static_cast<Index>(table.dst_offset[0]);
  const auto span = static_cast<Index>(table.end) - first;
  const Index i = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + threadIdx.x;
  if (i >= rows * span) return;
  const Index row = i / span, column = first + i % span;
  int k = 0;
  while (k + 1 < table.count && column >= static_cast<Index>(table.dst_offset[k + 1])) ++k;
  const W* src = static_cast<const W*>(table.src[k]);
  y[row * y_pitch + column] =
      src[row * static_cast<Index>(table.src_pitch[k]) + (column - static_cast<Index>(table.dst_offset[k]))];
}

// Whether every word index of a gather over `rows` rows (and the last block's threads) fits in 32 bits.
bool indices_fit_32_bits(const SourceTable& table, std::int64_t rows, std::int64_t y_pitch) {
  std::int64_t widest = std::max(y_pitch, table.end);
  for (int k = 0; k < table.count; ++k) widest = std::max(widest, table.src_pitch[k]);
  return rows * widest + kBlock <= std::int64_t{std::numeric_limits<std::uint32_t>::max()};
}

// Index as in gather_columns_kernel: 32 bits where the output's word count (and the last block) fit.
template <typename W, typename Index>
__global__ void upsample_kernel(const W* x, W* y, Index n, Index h, Index w, Index words, Index scale,
                                Index x_pitch, Index y_pitch) {
  start_after_previous_kernel();  // launched early (kernel_launch.cuh)
  const Index i = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + threadIdx.x;
  const Index out_h = h * scale, out_w = w * scale;
  if (i >= n * out_h * out_w * words) return;
  const Index word = i % words, ox = i / words % out_w, oy = i / words / out_w % out_h;
  const Index image = i / words / out_w / out_h;
  y[i / words * y_pitch + word] = x[((image * h + oy / scale) * w + ox / scale) * x_pitch + word];
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether every extent of the gather is a whole number of 16-byte words.
bool gather_packs(const std::vector<ColumnSource>& sources, const void* y, std::int64_t y_pitch,
                  std::int64_t per_word) {
  if (!aligned16(y) || y_pitch % per_word != 0) return false;
  for (const ColumnSource& s : sources) {
    if (!aligned16(s.src) || s.src_pitch % per_word != 0 || s.width % per_word != 0 ||
        s.dst_offset % per_word != 0)
      return false;
  }
  return true;
}

// Launches the gather in words of type W, each `per_word` elements.
template <typename W>
cudaError_t gather_in_words(const std::vector<ColumnSource>& sources, void* y, std::int64_t rows,
                            std::int64_t y_pitch, std::int64_t per_word, cudaStream_t stream) {
  for (std::size_t first = 0; first < sources.size(); first += kMaxSources) {
    SourceTable table{};
    for (std::size_t k = first; k < sources.size() && k < first + kMaxSources; ++k) {
      const ColumnSource& s = sources[k];
      table.src[table.count] = s.src;
      table.src_pitch[table.count] = s.src_pitch / per_word;
      table.dst_offset[table.count] = s.dst_offset / per_word;
      table.end = (s.dst_offset + s.width) / per_word;
      ++table.count;
    }
    const std::int64_t words = rows * (table.end - table.dst_offset[0]);
    if (words == 0) continue;
    const std::int64_t pitch = y_pitch / per_word;
    if (indices_fit_32_bits(table, rows, pitch)) {
      launch_early(gather_columns_kernel<W, std::uint32_t>, blocks_for(words), kBlock, 0, stream, table,
                   static_cast<W*>(y), static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(pitch));
    } else {
      launch_early(gather_columns_kernel<W, std::int64_t>, blocks_for(words), kBlock, 0, stream, table,
                   static_cast<W*>(y), rows, pitch);
    }
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

template <typename W>
cudaError_t upsample_in_words(const void* x, void* y, int n, int h, int w, int words, int scale,
                              std::int64_t x_pitch, std::int64_t y_pitch, cudaStream_t stream) {
  const std::int64_t total = static_cast<std::int64_t>(n) * h * scale * w * scale * words;
  if (total == 0) return cudaSuccess;
  const auto* from = static_cast<const W*>(x);
  auto* to = static_cast<W*>(y);
  // The largest index read or written.
  const std::int64_t extent = std::max({total, total / words * y_pitch, total / words * x_pitch});
  if (extent + kBlock <= std::int64_t{std::numeric_limits<std::uint32_t>::max()}) {
    using U = std::uint32_t;
    launch_early(upsample_kernel<W, U>, blocks_for(total), kBlock, 0, stream, from, to, U(n), U(h), U(w),
                 U(words), U(scale), U(x_pitch), U(y_pitch));
  } else {
    launch_early(upsample_kernel<W, std::int64_t>, blocks_for(total), kBlock, 0, stream, from, to, n, h, w,
                 words, scale, x_pitch, y_pitch);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t gather_columns(const std::vector<ColumnSource>& sources, void* y, Elem e, std::int64_t rows,
                           std::int64_t y_pitch, cudaStream_t stream) {
  const auto per_word = static_cast<std::int64_t>(16 / elem_bytes(e));
  if (gather_packs(sources, y, y_pitch, per_word))
    return gather_in_words<uint4>(sources, y, rows, y_pitch, per_word, stream);
  if (e == Elem::kF32) return gather_in_words<unsigned>(sources, y, rows, y_pitch, 1, stream);
  return gather_in_words<unsigned short>(sources, y, rows, y_pitch, 1, stream);
}

cudaError_t upsample_nearest(const void* x, void* y, Elem e, int n, int h, int w, int c, int scale,
                             cudaStream_t stream, const UpsamplePitches& pitches) {
  const int per_word = 16 / static_cast<int>(elem_bytes(e));
  const std::int64_t xp = pitches.x > 0 ? pitches.x : c, yp = pitches.y > 0 ? pitches.y : c;
  if (c % per_word == 0 && xp % per_word == 0 && yp % per_word == 0 && aligned16(x) && aligned16(y))
    return upsample_in_words<uint4>(x, y, n, h, w, c / per_word, scale, xp / per_word, yp / per_word, stream);
  if (e == Elem::kF32) return upsample_in_words<unsigned>(x, y, n, h, w, c, scale, xp, yp, stream);
  return upsample_in_words<unsigned short>(x, y, n, h, w, c, scale, xp, yp, stream);
}

}  // namespace kiln::cuda
