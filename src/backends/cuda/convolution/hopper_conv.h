// A dense or grouped convolution (pointwise, or any window the copy engine's im2col loads express) on
// kiln's Hopper kernel (gemm_conv_kernels.h), fp16, FP8 or int8, a candidate raced against cuDNN's and
// cuBLASLt's when tactics are timed. It reads and writes channel views, and its epilogue (scale, bias,
// residual, any activation, fp16 output and/or the codes the next FP8 or int8 layer reads) is always fused. A
// variant is a tile (hopper::tile_number()).
#pragma once

#include <optional>
#include <vector>

#include "backends/cuda/convolution/kiln_kernels.h"
#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"

namespace kiln::cuda {

// ConvBuffers as for cuDNN's layers: fp16 operands, or for FP8 (int8) layers E4M3 (int8) codes with
// `scale`; `bias` is f32 in all (the caller uploads it so). The residual is fp16, or codes where
// `residual_codes_scale` is set (int8 ones where `residual_int8` is); the codes written are on their grid.
class KilnHopperConv final : public KilnConv {
 public:
  // Whether this GPU runs the kernel and some tile computes `geometry` with `operand` into `buffers`' y
  // and codes (the copy engine's output pitches and alignment).
  static bool takes(const ConvGeometry& geometry, hopper::Operand operand, const ConvBuffers& buffers);

  KilnHopperConv(const ConvGeometry& geometry, hopper::Operand operand, Act act, const ConvBuffers& buffers,
                 std::string_view gpu);

 private:
  std::vector<int> variants() const override;
  bool runs(int variant) const override;
  cudaError_t launch(const ConvBuffers& buffers, int variant, cudaStream_t stream) const override;

  hopper::GemmConvShape shape_;
  hopper::Operand operand_;
  Act act_;
  bool residual_codes_;
  bool codes_;
};

// The kernel on the layer's operands as it holds them (the bias uploaded f32); nothing for other layers
// (linear, f32 programs, dilated, a GPU that is not Hopper, a shape no tile takes).
std::optional<KilnConvOffer> offer_hopper_conv(const KilnConvRequest& request);

}  // namespace kiln::cuda
