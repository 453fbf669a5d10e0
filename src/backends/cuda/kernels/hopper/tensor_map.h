// Tensor maps: the descriptors the copy engine (TMA) reads a tile of a global tensor through. They are
// made by the driver's cuTensorMapEncodeTiled, reached through the runtime's entry-point query so that
// kiln links no driver library.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace kiln::cuda::hopper {

// A row-major matrix of `rows` x `columns` elements of `element_bytes` (1 or 2), `pitch` elements
// between rows, copied in boxes of `box_rows` x `box_bytes` (128 or 64) to or from shared memory with the
// swizzle of that width. Loads of elements past the matrix's edges give zeros; stores there write
// nothing. False when the driver refuses the map.
bool encode_swizzled_rows(CUtensorMap& map, const void* base, int element_bytes, std::int64_t rows,
                          std::int64_t columns, std::int64_t pitch, int box_rows, int box_bytes = 128);

// NHWC x of `batch` x `height` x `width` pixels of `channels` elements (`pitch` between pixels) read for
// a convolution window: boxes of `box_rows` consecutive output pixels x `box_bytes` (128 or 64) of
// channels, each pixel the window's top-left input position shifted by the load's tap; padding arrives as
// zeros. The swizzle of that width, as encode_swizzled_rows(). False when the driver refuses the map.
struct Im2colWindow {
  int batch, height, width, channels, pitch;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
};
bool encode_im2col_rows(CUtensorMap& map, const void* base, int element_bytes, const Im2colWindow& window,
                        int box_rows, int box_bytes = 128);

}  // namespace kiln::cuda::hopper
