// Constants as the CUDA program's kernels read them, prepared on the host at compile time. Host code
// only (testable without a GPU).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace kiln::cuda {

// [O, I, kh, kw] -> [O, kh, kw, I] (cuDNN's NHWC filter layout), f32.
Tensor to_krsc(const Tensor& weights);

// KRSC weights of a grouped convolution ([O, kh, kw, I / groups]) as the dense convolution's
// ([O, kh, kw, I]): each output channel's group in place, zeros between the groups.
Tensor block_diagonal(const Tensor& grouped_krsc, std::int64_t channels_in, std::int64_t groups);

// KRSC weights of a depthwise convolution ([C, kh, kw, 1]) as kiln's depthwise kernel reads them:
// [kh, kw, C], each tap's weights for all channels together.
Tensor depthwise_taps(const Tensor& depthwise_krsc);

// KRSC weights ([O, kh, kw, I]) as kiln's narrow-input convolution kernel reads them: [kh, kw, I, O], each
// tap's and input channel's weights for all output channels together.
Tensor narrow_conv_taps(const Tensor& krsc);

// An inference batch norm as y = x * scale[c] + shift[c], computed in double and rounded once.
struct ScaleShift {
  Tensor scale;
  Tensor shift;
};
ScaleShift fold_batch_norm(const Tensor& gamma, const Tensor& beta, const Tensor& mean, const Tensor& var,
                           float epsilon);

// An FP8 convolution's output scale per channel: the input's scale times the weights' (one scale for all
// channels, or one per channel).
Tensor fp8_output_scales(float input_scale, const Tensor& weight_scales, std::int64_t channels);

}  // namespace kiln::cuda
