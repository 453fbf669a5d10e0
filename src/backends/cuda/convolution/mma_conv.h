// A dense fp16 convolution on kiln's tensor-core kernel (mma_conv_kernels.h), a candidate raced against
// cuDNN's when tactics are timed; unlike kiln's other Ampere-era kernels it reads and writes channel
// views, so it races on the layers that only cuDNN's graph API took before. Its epilogue (bias, residual,
// any activation) is always fused.
#pragma once

#include <optional>
#include <vector>

#include "backends/cuda/convolution/kiln_kernels.h"
#include "backends/cuda/kernels/mma_conv_kernels.h"

namespace kiln::cuda {

// A variant (how the launch divides the work) as its number: 16 x pixel tiles + channel tiles.
inline int mma_variant_number(const MmaConvVariant& v) { return v.pixel_tiles * 16 + v.channel_tiles; }

// ConvBuffers::weight holds the weights in fragment order (mma_conv_fragments()), fp16.
class KilnMmaConv final : public KilnConv {
 public:
  // Whether some variant of the kernel computes `geometry` (fp16 is the caller's part).
  static bool takes(const ConvGeometry& geometry);

  KilnMmaConv(const ConvGeometry& geometry, Act act, bool residual, std::string_view gpu);

 private:
  std::vector<int> variants() const override;
  bool runs(int variant) const override;
  cudaError_t launch(const ConvBuffers& buffers, int variant, cudaStream_t stream) const override;

  MmaConvShape shape_;
  Act act_;
  bool residual_;
};

// The kernel on the layer's weights in fragment order; nothing for layers it does not compute (not fp16,
// FP8, codes, linear, a shape no variant takes) or with the mma-conv option off.
std::optional<KilnConvOffer> offer_mma_conv(const KilnConvRequest& request);

}  // namespace kiln::cuda
