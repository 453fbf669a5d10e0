// kiln's Hopper convolution kernel: an NHWC convolution is the implicit GEMM
// y[pixels, k] = x_window[pixels, taps x c] * w[k, taps x c]^T (for a pointwise layer simply x[pixels, c]),
// which this kernel computes with the tensor cores' warpgroup instructions (wgmma, sm_90a) from tiles the
// copy engine (TMA) brings into a ring of shared-memory stages: one producer warp issues the copies, one
// or two consumer warpgroups the matrix steps, and the epilogue runs in registers:
//   y = act(acc * scale[ch] + bias[ch] (+ residual)), written as fp16 and/or as E4M3 or int8 codes,
// which the copy engine stores from shared memory.
// Operands are fp16, or E4M3 or int8 codes (FP8 and int8 layers: scale is the product of the input's and
// the channel's weight scales). Accumulation is f32 (int8: exact s32 sums, converted to f32 once) and the
// output is rounded to fp16 once; codes for 8-bit readers are taken from that fp16 value. x, y and the
// residual may be channel views (a pitch wider than their channels).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "backends/cuda/kernels/hopper/operands.h"
#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda::hopper {

// A convolution window over NHWC x: the GEMM's rows are the output pixels, its reduction runs over the
// window's taps and, within a tap, the input channels (weights [channels_out, kernel_h, kernel_w,
// channels_in]). The copy engine gathers each tap's pixels (its im2col mode), padding with zeros. A
// window with no batch is a pointwise layer: x is read as the [pixels, channels_in] matrix it is.
struct GemmConvWindow {
  int batch = 0, height = 0, width = 0;  // of x
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int out_height = 0, out_width = 0;
};

// A grouped convolution is `groups` GEMMs side by side: group g reads x's channels [g x channels_in,
// (g + 1) x channels_in) and writes the output channels [g x channels_out / groups, ...), each through
// the same window. Its weights hold `weight_tap_channels` channels a tap, the group's channels then zeros
// (grouped_weight_tap_channels()): a K block that runs past the group's channels reads the next group's
// x, which the zeros cancel.
struct GemmConvShape {
  int pixels = 0;        // GEMM rows: batch x output height x output width
  int channels_out = 0;  // GEMM columns, of every group
  int channels_in = 0;   // of x a group reads (the reduction is taps x channels_in)
  // Elements between neighbouring pixels of x, y and the residual.
  int x_pitch = 0, y_pitch = 0, residual_pitch = 0;
  GemmConvWindow window;
  int groups = 1;
  int weight_tap_channels = 0;  // of the weights a tap; 0: channels_in
  int tap_channels() const { return weight_tap_channels != 0 ? weight_tap_channels : channels_in; }
};

// The weights' channels a tap of a grouped convolution: the group's input channels up to a multiple of
// 64 bytes, so that no K block of a 64-byte-row tile runs into the next tap's weights (tiles of 128-byte
// rows take the layer where that is a multiple of 128 bytes). A dense convolution's are its channels: x
// past them reads as zeros.
constexpr int grouped_weight_tap_channels(int channels_in, int groups, int element_bytes) {
  if (groups == 1) return channels_in;
  const int per_row = kNarrowRowBytes / element_bytes;
  return (channels_in + per_row - 1) / per_row * per_row;
}

// How a launch tiles the output: each block computes 64 x `consumers` pixels by `columns` channels, and a
// multiprocessor holds `blocks` blocks at once (a tactic: pick_tactic() times the tiles). Two blocks a
// multiprocessor share its shared memory, so their rings are shallower, but one block's epilogue then runs
// beside the other's matrix steps: a layer with few K blocks spends most of its time in the epilogue.
// `k_bytes` is the K a stage row holds (operands.h): 128, or 64 for layers whose input channels leave part
// of a 128-byte row empty (64 E4M3 channels, 32 fp16 ones), whose rings then carry no zeros.
struct GemmConvTile {
  int columns = 128;  // 64, 128 or 256
  int consumers = 2;  // consumer warpgroups: 1 or 2
  int blocks = 1;     // 1, or 2 for one consumer and at most 128 columns
  int k_bytes = kRowBytes;
};

// Every tile the kernel is instantiated for: fewest threads and columns first, then the narrow-row tiles.
inline constexpr GemmConvTile kGemmConvTiles[] = {{64, 1, 1},
                                                  {128, 1, 1},
                                                  {64, 2, 1},
                                                  {256, 1, 1},
                                                  {128, 2, 1},
                                                  {256, 2, 1},
                                                  {64, 1, 2},
                                                  {128, 1, 2},
                                                  {64, 2, 1, kNarrowRowBytes},
                                                  {128, 2, 1, kNarrowRowBytes},
                                                  {256, 2, 1, kNarrowRowBytes},
                                                  {64, 1, 2, kNarrowRowBytes}};

// Whether a tile's rows leave part of K's bytes unused on a layer of `channel_bytes` input channel bytes a
// tap, so that narrow-row tiles are worth timing.
constexpr bool rows_carry_zeros(int channel_bytes) { return channel_bytes % kRowBytes != 0; }

// A tile as one number (a tactic record's algorithm) and back: columns x 10 + consumers, plus 10000 for
// two blocks a multiprocessor, plus 100000 for 64-byte rows.
constexpr int tile_number(const GemmConvTile& t) {
  return (t.k_bytes == kNarrowRowBytes ? 100000 : 0) + (t.blocks - 1) * 10000 + t.columns * 10 + t.consumers;
}
constexpr GemmConvTile tile_from_number(int n) {
  return {n % 10000 / 10, n % 10, n % 100000 / 10000 + 1, n >= 100000 ? kNarrowRowBytes : kRowBytes};
}

struct GemmConvEpilogue {
  const float* scale = nullptr;  // [channels_out]; null: 1
  const float* bias = nullptr;   // [channels_out] f32 (zeros for a layer without one)
  const __half* residual = nullptr;
  E4m3In residual_codes;  // the residual as codes instead (residual then null), on `residual_grid`
  CodeGrid residual_grid = CodeGrid::kE4m3;
  Act act = Act::kNone;
  __half* y = nullptr;  // null: only the codes are written
  // Null codes: none. E4M3 or int8 codes (an fp16 or int8 layer's int8 readers) by their grid.
  CodesOut codes;
};

// Whether this process's GPU runs the kernel (compute capability 9.0: the sm_90a code runs nowhere else).
bool hopper_gpu();

// The epilogues the kernel is instantiated for, beside the shapes gemm_conv_takes() checks: E4M3 layers
// write and read E4M3 codes, int8 layers int8 codes, fp16 layers either grid (those of a quantized plan
// the precision tactic kept fp16).
bool gemm_conv_epilogue_takes(Operand operand, const GemmConvEpilogue& epilogue);

// Whether gemm_conv() computes `shape` with `tile`: row pitches of 16-byte multiples for the copy
// engine (x's, the residual's (fp16, or codes when `residual_codes`), the output's for fp16 values, and for
// its codes when `writes_codes`), an even channel count, a window whose padding the copy engine's im2col
// box can express, a tile the kernel is instantiated for; for groups, output channels a group of a
// multiple of the tile's columns (no tile spans two groups) and weight taps of whole K blocks.
bool gemm_conv_takes(const GemmConvShape& shape, Operand operand, const GemmConvTile& tile,
                     bool writes_codes = false, bool residual_codes = false);

// x: [pixels, x_pitch] (windowed: [batch, height, width, x_pitch]) and w: [channels_out, taps x
// tap_channels()], both of `operand`, 16-byte aligned; scale and
// bias 8-byte aligned, y, the codes and the residual 16-byte. Returns
// cudaErrorInvalidConfiguration for what gemm_conv_takes() or gemm_conv_epilogue_takes() refuses (or a
// missing bias, or a missing scale for 8-bit operands),
// cudaErrorMisalignedAddress for misaligned buffers and cudaErrorNotSupported off Hopper.
cudaError_t gemm_conv(Operand operand, const void* x, const void* w, const GemmConvShape& shape,
                      const GemmConvTile& tile, const GemmConvEpilogue& epilogue, cudaStream_t stream);

}  // namespace kiln::cuda::hopper
