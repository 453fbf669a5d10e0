// A depthwise convolution on kiln's own kernel (depthwise_kernels.h), a candidate raced against cuDNN's
// when tactics are timed: cuDNN's grouped NHWC kernels are not always fast for one filter per channel.
// Its epilogue (bias, residual, any activation) is always fused; it has no variants.
#pragma once

#include <optional>

#include "backends/cuda/convolution/kiln_kernels.h"
#include "backends/cuda/kernels/depthwise_kernels.h"

namespace kiln::cuda {

// ConvBuffers::weight holds [r, s, c] weights (depthwise_taps()).
class KilnDepthwiseConv final : public KilnConv {
 public:
  // Whether the kernel computes `geometry`: one filter per channel (groups = channels in = channels out).
  static bool takes(const ConvGeometry& geometry);

  KilnDepthwiseConv(Elem elem, const ConvGeometry& geometry, Act act, bool residual, std::string_view gpu);

 private:
  cudaError_t launch(const ConvBuffers& buffers, int variant, cudaStream_t stream) const override;

  Elem elem_;
  DepthwiseShape shape_;
  Act act_;
  bool residual_;
};

// The kernel on the layer's weights taps-major; nothing for layers it does not compute (FP8, codes,
// linear, not depthwise).
std::optional<KilnConvOffer> offer_depthwise_conv(const KilnConvRequest& request);

}  // namespace kiln::cuda
