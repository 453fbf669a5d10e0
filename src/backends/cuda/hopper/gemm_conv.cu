// The host side of kiln's Hopper pointwise convolution (gemm_conv_kernels.h): what the kernel takes, its
// tensor maps and the launch.
#include <cuda.h>

#include <cstdint>

#include "backends/cuda/hopper/gemm_conv_kernel.cuh"
#include "backends/cuda/hopper/tensor_map.h"

namespace kiln::cuda::hopper {

namespace {

bool aligned(const void* p, std::uintptr_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

bool epilogue_aligned(const GemmConvEpilogue& e) {
  return aligned(e.bias, 8) && aligned(e.scale, 8) && aligned(e.y, 4) && aligned(e.residual, 4) &&
         aligned(e.codes.codes, 2);
}

}  // namespace

bool hopper_gpu() {
  static const bool hopper = [] {
    int device = 0, major = 0, minor = 0;
    return cudaGetDevice(&device) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
           cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess &&
           major == 9 && minor == 0;
  }();
  return hopper;
}

bool gemm_conv_takes(const GemmConvShape& s, Operand operand, const GemmConvTile& tile) {
  const int bytes = operand_bytes(operand);
  const bool tile_known = (tile.consumers == 1 || tile.consumers == 2) &&
                          (tile.columns == 64 || tile.columns == 128 || tile.columns == 256);
  return tile_known && s.pixels > 0 && s.channels_out > 0 && s.channels_in > 0 &&
         (s.channels_in * bytes) % 16 == 0 && (s.x_pitch * bytes) % 16 == 0 && s.x_pitch >= s.channels_in &&
         s.channels_out % 2 == 0 && s.y_pitch % 2 == 0 && s.y_pitch >= s.channels_out &&
         (s.residual_pitch == 0 || (s.residual_pitch % 2 == 0 && s.residual_pitch >= s.channels_out));
}

cudaError_t gemm_conv(Operand operand, const void* x, const void* w, const GemmConvShape& shape,
                      const GemmConvTile& tile, const GemmConvEpilogue& epilogue, cudaStream_t stream) {
  if (!hopper_gpu()) return cudaErrorNotSupported;
  if (!gemm_conv_takes(shape, operand, tile)) return cudaErrorInvalidConfiguration;
  if (epilogue.bias == nullptr || (operand == Operand::kE4m3 && epilogue.scale == nullptr) ||
      (epilogue.y == nullptr && epilogue.codes.codes == nullptr)) {
    return cudaErrorInvalidConfiguration;
  }
  if (!aligned(x, 16) || !aligned(w, 16) || !epilogue_aligned(epilogue)) return cudaErrorMisalignedAddress;
  const int bytes = operand_bytes(operand);
  CUtensorMap x_map, w_map;
  if (!encode_swizzled_rows(x_map, x, bytes, shape.pixels, shape.channels_in, shape.x_pitch,
                            gemm_conv_detail::kRowsPerConsumer * tile.consumers) ||
      !encode_swizzled_rows(w_map, w, bytes, shape.channels_out, shape.channels_in, shape.channels_in,
                            tile.columns)) {
    return cudaErrorInvalidValue;
  }
  const EpilogueArgs e{shape, epilogue};
  return operand == Operand::kF16 ? launch_tile<Operand::kF16>(tile, x_map, w_map, e, stream)
                                  : launch_tile<Operand::kE4m3>(tile, x_map, w_map, e, stream);
}

}  // namespace kiln::cuda::hopper
