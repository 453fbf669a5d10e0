// An RGB stem convolution on kiln's own kernel (narrow_conv_kernels.h), a candidate raced against cuDNN's
// when tactics are timed. Its epilogue (bias, any activation) is always fused; it has no variants.
#pragma once

#include <optional>

#include "backends/cuda/convolution/kiln_kernels.h"
#include "backends/cuda/kernels/narrow_conv_kernels.h"
#include "core/tensor.h"

namespace kiln::cuda {

// The kernel runs on the host copies of the weights and bias given to the constructor.
class KilnNarrowConv final : public KilnConv {
 public:
  // Whether the kernel computes `geometry` with or without a residual: a dense RGB stem
  // (narrow_conv_is_stem()).
  static bool takes(const ConvGeometry& geometry, bool residual);

  // `taps` [r, s, c, k] (narrow_conv_taps()) and `bias` [k], f32 on the host.
  KilnNarrowConv(Elem elem, const ConvGeometry& geometry, Act act, const Tensor& taps, const Tensor& bias,
                 std::string_view gpu);

 private:
  cudaError_t launch(const ConvBuffers& buffers, int variant, cudaStream_t stream) const override;

  Elem elem_;
  NarrowConvShape shape_;
  Act act_;
  Tensor taps_, bias_;  // f32, rounded to the storage type as a device copy would be
};

// The kernel for an RGB stem; nothing for other layers (FP8, codes, linear, a residual, not a stem).
std::optional<KilnConvOffer> offer_narrow_conv(const KilnConvRequest& request);

}  // namespace kiln::cuda
