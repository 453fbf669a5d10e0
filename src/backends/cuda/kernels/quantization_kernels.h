// The CUDA kernels of FP8 and int8 layers: the input quantizers and the FP8 convolution epilogue (see
// kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// A quantize point's codes of x, `count` bytes at codes.codes: FP8 E4M3 codes of x / scale (round to
// nearest even, saturating at +-448), as an FP8 layer reads its input, or int8 codes of x * (1 / scale)
// (round to nearest even, saturating at -128 and 127, NaN to 0), as an int8 layer reads it and
// quantize_to_int8 computes them.
cudaError_t quantize_codes(const void* x, Elem e, const CodesOut& codes, std::int64_t count,
                           cudaStream_t stream);

// The epilogue of an FP8 convolution cuDNN could not fuse: y = act(acc * scale[c] + bias[c] (+ residual)),
// from its f32 accumulator (acc, rows x channels) to y of type e; scale and bias are f32, residual
// (type e) may be null. With `codes`, also the E4M3 codes of y for the next FP8 layer (y may then be null).
cudaError_t scale_bias_act(const float* acc, const float* scale, const float* bias, const void* residual,
                           void* y, Elem e, std::int64_t rows, int channels, Act act, cudaStream_t stream,
                           const CodesOut& codes = {});

}  // namespace kiln::cuda
