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

// KRSC weights ([O, kh, kw, I]) with each tap's I channels followed by zeros up to `tap_channels`:
// [O, kh, kw, tap_channels] (kiln's Hopper kernel reads a grouped layer's taps so, gemm_conv_kernels.h).
Tensor pad_taps(const Tensor& krsc, std::int64_t tap_channels);

// KRSC weights of a depthwise convolution ([C, kh, kw, 1]) as kiln's depthwise kernel reads them:
// [kh, kw, C], each tap's weights for all channels together.
Tensor depthwise_taps(const Tensor& depthwise_krsc);

// KRSC weights ([O, kh, kw, I]) as kiln's RGB stem kernel reads them: [kh, kw, I, O], each
// tap's and input channel's weights for all output channels together.
Tensor narrow_conv_taps(const Tensor& krsc);

// KRSC weights ([O, kh, kw, I], I a multiple of 16, O of 8) as kiln's tensor-core convolution reads them
// (mma_conv_kernels.h): [steps = kh * kw * I / 16][O / 8][32 lanes][4], step (tap, 16 input channels) and
// 8 output channels forming one B fragment of mma.sync's 16 x 8 x 16 tile, lane l holding output channel
// l / 4's weights for input channels 2 (l % 4) + {0, 1, 8, 9} of the step.
Tensor mma_conv_fragments(const Tensor& krsc);

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
