// kiln's Hopper convolution kernel for pointwise (1x1, stride 1) layers: an NHWC 1x1 convolution is the
// GEMM y[pixels, k] = x[pixels, c] * w[k, c]^T, which this kernel computes with the tensor cores'
// warpgroup instructions (wgmma, sm_90a) from tiles the copy engine (TMA) brings into a ring of
// shared-memory stages: one producer warp issues the copies, one or two consumer warpgroups the matrix
// steps, and the whole epilogue runs in registers:
//   y = act(acc * scale[ch] + bias[ch] (+ residual)), written as fp16 and/or as E4M3 codes.
// Operands are fp16, or E4M3 codes (FP8 layers: scale is the product of the input's and the channel's
// weight scales). Accumulation is f32 and the output is rounded to fp16 once. x, y and the residual may
// be channel views (a pitch wider than their channels).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "backends/cuda/hopper/operands.h"
#include "backends/cuda/kernel_types.h"

namespace kiln::cuda::hopper {

struct GemmConvShape {
  int pixels = 0;        // GEMM rows: batch x height x width
  int channels_out = 0;  // GEMM columns
  int channels_in = 0;   // the reduction
  // Elements between neighbouring pixels of x, y and the residual.
  int x_pitch = 0, y_pitch = 0, residual_pitch = 0;
};

// How a launch tiles the output: each block computes 64 x `consumers` pixels by `columns` channels (a
// tactic: pick_tactic() times the tiles).
struct GemmConvTile {
  int columns = 128;  // 64, 128 or 256
  int consumers = 2;  // consumer warpgroups: 1 or 2
};

struct GemmConvEpilogue {
  const float* scale = nullptr;  // [channels_out]; null: 1
  const float* bias = nullptr;   // [channels_out] f32 (zeros for a layer without one)
  const __half* residual = nullptr;
  Act act = Act::kNone;
  __half* y = nullptr;  // null: only the codes are written
  E4m3Out codes;
};

// Whether this process's GPU runs the kernel (compute capability 9.0: the sm_90a code runs nowhere else).
bool hopper_gpu();

// Whether gemm_conv() computes `shape` with `tile`: row pitches of 16-byte multiples for the copy
// engine, even output pitches, a tile the kernel is instantiated for.
bool gemm_conv_takes(const GemmConvShape& shape, Operand operand, const GemmConvTile& tile);

// x: [pixels, x_pitch] and w: [channels_out, channels_in], both of `operand`, 16-byte aligned; scale and
// bias 8-byte aligned, y and the residual 4-byte, the codes 2-byte. Returns
// cudaErrorInvalidConfiguration for what gemm_conv_takes() refuses (or a missing bias or FP8 scale),
// cudaErrorMisalignedAddress for misaligned buffers and cudaErrorNotSupported off Hopper.
cudaError_t gemm_conv(Operand operand, const void* x, const void* w, const GemmConvShape& shape,
                      const GemmConvTile& tile, const GemmConvEpilogue& epilogue, cudaStream_t stream);

}  // namespace kiln::cuda::hopper
