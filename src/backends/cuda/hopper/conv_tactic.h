// A dense convolution (pointwise, or any window the copy engine's im2col loads express) on kiln's Hopper
// kernel (gemm_conv_kernels.h), fp16 or FP8, a candidate raced against cuDNN's and cuBLASLt's in
// pick_tactic() (tactic.h). It reads and writes channel views, and its epilogue (scale, bias, residual,
// any activation, fp16 output and/or the E4M3 codes the next FP8 layer reads) is always fused.
#pragma once

#include <string>

#include "backends/cuda/conv.h"
#include "backends/cuda/hopper/gemm_conv_kernels.h"
#include "backends/cuda/tactic.h"

namespace kiln::cuda {

struct HopperConvTactic {
  hopper::GemmConvTile tile;
  double milliseconds = 0;
};

// Takes part in pick_tactic() (tactic.h). ConvBuffers as for cuDNN's layers: fp16 operands, or for FP8
// layers E4M3 codes with `scale`; `bias` is f32 in both (the caller uploads it so).
class KilnHopperConv {
 public:
  using Tactic = HopperConvTactic;

  // Whether this GPU runs the kernel and some tile computes `geometry` with `operand` into `buffers`' y
  // and codes (the copy engine's output pitches and alignment).
  static bool takes(const ConvGeometry& geometry, hopper::Operand operand, const ConvBuffers& buffers);

  KilnHopperConv(const ConvGeometry& geometry, hopper::Operand operand, Act act, bool residual, E4m3Out codes);

  const std::string& key() const { return key_; }
  bool restore(const TacticRecord& stored);
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen) { tile_ = chosen.tile; }
  // The tile as the algorithm number (hopper::tile_number()).
  static TacticRecord record(const Tactic& t) { return {true, hopper::tile_number(t.tile), 0, t.milliseconds, {}}; }
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const;

 private:
  cudaError_t launch(const ConvBuffers& buffers, const hopper::GemmConvTile& tile, cudaStream_t stream) const;

  hopper::GemmConvShape shape_;
  hopper::Operand operand_;
  Act act_;
  bool residual_;
  bool codes_;
  hopper::GemmConvTile tile_;
  std::string key_;
};

}  // namespace kiln::cuda
