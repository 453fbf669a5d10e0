// The host side of kiln's Hopper pointwise convolution (gemm_conv_kernels.h): what the kernel takes, its
// tensor maps and the launch.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "backends/cuda/kernels/hopper/gemm_conv_kernel.cuh"
#include "backends/cuda/kernels/hopper/tensor_map.h"

namespace kiln::cuda::hopper {

namespace {

bool aligned(const void* p, std::uintptr_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

// The copy engine reads and writes 16-byte aligned addresses.
bool epilogue_aligned(const GemmConvEpilogue& e) {
  return aligned(e.bias, 8) && aligned(e.scale, 8) && aligned(e.y, 16) && aligned(e.residual, 16) &&
         aligned(e.residual_codes.codes, 16) && aligned(e.codes.codes, 16);
}

// A window the im2col maps express: padding below the kernel's extent (the bounding box's
// corners), strides the copy engine walks (at most 8), and an output size that matches.
bool window_takes(const GemmConvShape& s) {
  const GemmConvWindow& w = s.window;
  if (w.batch == 0) return true;
  const auto extent = [](int in, int kernel, int stride, int pad, int out) {
    return in > 0 && kernel >= 1 && kernel <= 16 && stride >= 1 && stride <= 8 && pad >= 0 && pad < kernel &&
           in + 2 * pad >= kernel && out == (in + 2 * pad - kernel) / stride + 1;
  };
  return extent(w.height, w.kernel_h, w.stride_h, w.pad_h, w.out_height) &&
         extent(w.width, w.kernel_w, w.stride_w, w.pad_w, w.out_width) &&
         static_cast<long long>(w.batch) * w.out_height * w.out_width == s.pixels;
}

// Groups the kernel tiles: each tile within one group's output channels, and each K block within one tap
// of the weights (a dense layer's x reads as zeros past its channels instead).
bool groups_take(const GemmConvShape& s, int bytes, const GemmConvTile& tile) {
  if (s.groups == 1) return s.tap_channels() == s.channels_in;
  return s.groups > 1 && s.channels_out % s.groups == 0 && (s.channels_out / s.groups) % tile.columns == 0 &&
         s.tap_channels() >= s.channels_in && (s.tap_channels() * bytes) % tile.k_bytes == 0;
}

// The load maps of the operands and the store maps of the outputs (left zero where not written).
bool encode_maps(GemmConvMaps& m, const void* x, const void* w, Operand operand, const GemmConvShape& s,
                 const GemmConvTile& tile, const GemmConvEpilogue& e) {
  using gemm_conv_detail::kChunkColumns;
  using gemm_conv_detail::kRowsPerConsumer;
  const int bytes = operand_bytes(operand);
  m = {};
  const GemmConvWindow& v = s.window;
  const int reduction = v.kernel_h * v.kernel_w * s.tap_channels();
  const int rows = kRowsPerConsumer * tile.consumers;
  const int x_channels = s.groups * s.channels_in;
  const bool x_mapped =
      v.batch == 0 ? encode_swizzled_rows(m.x, x, bytes, s.pixels, x_channels, s.x_pitch, rows, tile.k_bytes)
                   : encode_im2col_rows(m.x, x, bytes,
                                        {v.batch, v.height, v.width, x_channels, s.x_pitch, v.kernel_h,
                                         v.kernel_w, v.stride_h, v.stride_w, v.pad_h, v.pad_w},
                                        rows, tile.k_bytes);
  return x_mapped &&
         encode_swizzled_rows(m.w, w, bytes, s.channels_out, reduction, reduction, tile.columns,
                              tile.k_bytes) &&
         (e.y == nullptr || encode_swizzled_rows(m.y, e.y, 2, s.pixels, s.channels_out, s.y_pitch,
                                                 kRowsPerConsumer, kChunkColumns * 2)) &&
         (e.codes.codes == nullptr ||
          encode_swizzled_rows(m.codes, e.codes.codes, 1, s.pixels, s.channels_out, s.y_pitch,
                               kRowsPerConsumer, kChunkColumns)) &&
         (e.residual == nullptr ||
          encode_swizzled_rows(m.residual, e.residual, 2, s.pixels, s.channels_out, s.residual_pitch,
                               kRowsPerConsumer, kChunkColumns * 2)) &&
         (e.residual_codes.codes == nullptr ||
          encode_swizzled_rows(m.residual, e.residual_codes.codes, 1, s.pixels, s.channels_out,
                               s.residual_pitch, kRowsPerConsumer, kChunkColumns));
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

bool gemm_conv_takes(const GemmConvShape& s, Operand operand, const GemmConvTile& tile, bool writes_codes,
                     bool residual_codes) {
  const int bytes = operand_bytes(operand);
  const bool tile_known =
      std::any_of(std::begin(kGemmConvTiles), std::end(kGemmConvTiles), [&](const GemmConvTile& t) {
        return t.columns == tile.columns && t.consumers == tile.consumers && t.blocks == tile.blocks &&
               t.k_bytes == tile.k_bytes;
      });
  return tile_known && s.pixels > 0 && s.channels_out > 0 && s.channels_in > 0 &&
         groups_take(s, bytes, tile) && (s.channels_in * bytes) % 16 == 0 && (s.x_pitch * bytes) % 16 == 0 &&
         s.x_pitch >= static_cast<long long>(s.groups) * s.channels_in && s.channels_out % 2 == 0 &&
         s.y_pitch % (writes_codes ? 16 : 8) == 0 && s.y_pitch >= s.channels_out &&
         (s.residual_pitch == 0 ||
          (s.residual_pitch % (residual_codes ? 16 : 8) == 0 && s.residual_pitch >= s.channels_out)) &&
         window_takes(s);
}

bool gemm_conv_epilogue_takes(Operand operand, const GemmConvEpilogue& e) {
  if (operand == Operand::kF16) return true;
  const CodeGrid grid = operand == Operand::kE4m3 ? CodeGrid::kE4m3 : CodeGrid::kInt8;
  return (e.codes.codes == nullptr || e.codes.grid == grid) &&
         (e.residual_codes.codes == nullptr || e.residual_grid == grid);
}

cudaError_t gemm_conv(Operand operand, const void* x, const void* w, const GemmConvShape& shape,
                      const GemmConvTile& tile, const GemmConvEpilogue& epilogue, cudaStream_t stream) {
  if (!hopper_gpu()) return cudaErrorNotSupported;
  if (!gemm_conv_takes(shape, operand, tile, epilogue.codes.codes != nullptr,
                       epilogue.residual_codes.codes != nullptr)) {
    return cudaErrorInvalidConfiguration;
  }
  if (!gemm_conv_epilogue_takes(operand, epilogue) || epilogue.bias == nullptr ||
      (operand_scaled(operand) && epilogue.scale == nullptr) ||
      (epilogue.y == nullptr && epilogue.codes.codes == nullptr) ||
      (epilogue.residual != nullptr && epilogue.residual_codes.codes != nullptr)) {
    return cudaErrorInvalidConfiguration;
  }
  if (!aligned(x, 16) || !aligned(w, 16) || !epilogue_aligned(epilogue)) return cudaErrorMisalignedAddress;
  GemmConvMaps maps;
  if (!encode_maps(maps, x, w, operand, shape, tile, epilogue)) return cudaErrorInvalidValue;
  EpilogueArgs e{shape, epilogue};
  e.shape.weight_tap_channels = shape.tap_channels();  // the kernel reads it as given
  switch (operand) {
    case Operand::kF16:
      return launch_tile<Operand::kF16>(tile, maps, e, stream);
    case Operand::kE4m3:
      return launch_tile<Operand::kE4m3>(tile, maps, e, stream);
    case Operand::kS8:
      return launch_tile<Operand::kS8>(tile, maps, e, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace kiln::cuda::hopper
