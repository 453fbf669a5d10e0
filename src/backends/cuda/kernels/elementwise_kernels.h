// Elementwise CUDA kernels over NHWC rows x channels (see kernel_types.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// y = act(a + b (+ bias per channel)) over rows x channels; b and bias may be null; y may alias a. With
// `codes`, also y's E4M3 codes (y may then be null).
cudaError_t add_bias_act(const void* a, const void* b, const void* bias, void* y, Elem e, std::int64_t rows,
                         int channels, Act act, cudaStream_t stream, const CodesOut& codes = {});

// Elements between neighbouring pixels of add_act_views's operands (channel views, channel_views.h); the
// channel count where one is packed. Multiples of 8 for fp16, as the views' starts.
struct ViewPitches {
  std::int64_t a, b, y;
};

// y = act(a + b) over rows x channels where a, b and y may be channel views (y must not overlap a or b).
cudaError_t add_act_views(const void* a, const void* b, void* y, const ViewPitches& pitches, Elem e,
                          std::int64_t rows, int channels, Act act, cudaStream_t stream);

// y = x * scale[c] + shift[c] (an unfolded batch norm; scale and shift are f32).
cudaError_t scale_shift(const void* x, const float* scale, const float* shift, void* y, Elem e,
                        std::int64_t rows, int channels, cudaStream_t stream);

// Squeeze-excite's gate applied: y[image, pixel, c] = x[image, pixel, c] * gate[image, c], x NHWC of
// `images` x `pixels` rows of `channels`, gate [images, channels] (x's storage type); y must not alias gate.
cudaError_t channel_scale(const void* x, const void* gate, void* y, Elem e, int images, std::int64_t pixels,
                          int channels, cudaStream_t stream);

}  // namespace kiln::cuda
