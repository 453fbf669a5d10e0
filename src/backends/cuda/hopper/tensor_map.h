// Tensor maps: the descriptors the copy engine (TMA) reads a tile of a global tensor through. They are
// made by the driver's cuTensorMapEncodeTiled, reached through the runtime's entry-point query so that
// kiln links no driver library.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace kiln::cuda::hopper {

// A row-major matrix of `rows` x `columns` elements of `element_bytes` (1 or 2), `pitch` elements
// between rows, read in boxes of `box_rows` x 128 bytes into shared memory with the 128-byte swizzle.
// Elements past the matrix's edges arrive as zeros. False when the driver refuses the map.
bool encode_swizzled_rows(CUtensorMap& map, const void* base, int element_bytes, std::int64_t rows,
                          std::int64_t columns, std::int64_t pitch, int box_rows);

}  // namespace kiln::cuda::hopper
