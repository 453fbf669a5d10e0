#include "backends/cuda/kernels/hopper/tensor_map.h"

#include <cuda_runtime_api.h>

namespace kiln::cuda::hopper {

namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

using EncodeIm2col = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const int*, const int*, cuuint32_t, cuuint32_t,
                                  const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                  CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

void* driver_entry(const char* name) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return entry;
}

EncodeTiled encode_tiled() {
  static const auto function = reinterpret_cast<EncodeTiled>(driver_entry("cuTensorMapEncodeTiled"));
  return function;
}

EncodeIm2col encode_im2col() {
  static const auto function = reinterpret_cast<EncodeIm2col>(driver_entry("cuTensorMapEncodeIm2col"));
  return function;
}

// The swizzle as wide as a box's rows (128 or 64 bytes), which the kernels' descriptors name too.
CUtensorMapSwizzle swizzle_of(int box_bytes) {
  return box_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
}

CUtensorMapDataType data_type(int element_bytes) {
  return element_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

}  // namespace

bool encode_swizzled_rows(CUtensorMap& map, const void* base, int element_bytes, std::int64_t rows,
                          std::int64_t columns, std::int64_t pitch, int box_rows, int box_bytes) {
  const EncodeTiled encode = encode_tiled();
  if (encode == nullptr) return false;
  const CUtensorMapDataType type = data_type(element_bytes);
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(columns), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitch * element_bytes)};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_bytes / element_bytes), static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  return encode(&map, type, 2, const_cast<void*>(base), dims, strides, box, element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(box_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The bounding box of the window's top-left positions: from -pad to the last position whose window ends
// pad past the edge, in each spatial dimension (innermost first, as the tensor's dimensions).
bool encode_im2col_rows(CUtensorMap& map, const void* base, int element_bytes, const Im2colWindow& x,
                        int box_rows, int box_bytes) {
  const EncodeIm2col encode = encode_im2col();
  if (encode == nullptr) return false;
  const std::uint64_t pixel = static_cast<std::uint64_t>(x.pitch) * element_bytes;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(x.channels), static_cast<cuuint64_t>(x.width),
                              static_cast<cuuint64_t>(x.height), static_cast<cuuint64_t>(x.batch)};
  const cuuint64_t strides[3] = {pixel, pixel * x.width, pixel * x.width * x.height};
  const int lower[2] = {-x.pad_w, -x.pad_h};
  const int upper[2] = {x.pad_w - (x.kernel_w - 1), x.pad_h - (x.kernel_h - 1)};
  const cuuint32_t element_strides[4] = {1, static_cast<cuuint32_t>(x.stride_w), static_cast<cuuint32_t>(x.stride_h), 1};
  return encode(&map, data_type(element_bytes), 4, const_cast<void*>(base), dims, strides, lower, upper,
                static_cast<cuuint32_t>(box_bytes / element_bytes), static_cast<cuuint32_t>(box_rows), element_strides,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_of(box_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

}  // namespace kiln::cuda::hopper
