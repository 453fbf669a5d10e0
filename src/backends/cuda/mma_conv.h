// A dense fp16 convolution on kiln's tensor-core kernel (mma_conv_kernels.h), a candidate raced against
// cuDNN's in pick_tactic() (tactic.h) when tactics are timed; unlike kiln's other convolution kernels it
// reads and writes channel views, so it races on the layers that only cuDNN's graph API took before. Its
// epilogue (bias, residual, any activation) is always fused.
#pragma once

#include <string>

#include "backends/cuda/conv.h"
#include "backends/cuda/mma_conv_kernels.h"
#include "backends/cuda/tactic.h"

namespace kiln::cuda {

// A tactic is the variant (how the launch divides the work) and its time.
struct MmaConvTactic {
  MmaConvVariant variant;
  double milliseconds = 0;
};

// Takes part in pick_tactic() (tactic.h). ConvBuffers::weight holds the weights in fragment order
// (mma_conv_fragments()), fp16.
class KilnMmaConv {
 public:
  using Tactic = MmaConvTactic;

  // Whether some variant of the kernel computes `geometry` (fp16 is the caller's part).
  static bool takes(const ConvGeometry& geometry);

  KilnMmaConv(const ConvGeometry& geometry, Act act, bool residual);

  const std::string& key() const { return key_; }
  // A stored variant applies when the kernel still takes it.
  bool restore(const TacticRecord& stored);
  // Every variant the kernel takes for the layer.
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen) { variant_ = chosen.variant; }
  // The variant as the algorithm number: 16 x pixel tiles + channel tiles.
  static TacticRecord record(const Tactic& t) {
    return {true, t.variant.pixel_tiles * 16 + t.variant.channel_tiles, 0, t.milliseconds, {}};
  }
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const;

 private:
  cudaError_t launch(const ConvBuffers& buffers, const MmaConvVariant& variant, cudaStream_t stream) const;

  MmaConvShape shape_;
  Act act_;
  bool residual_;
  MmaConvVariant variant_;
  std::string key_;
};

}  // namespace kiln::cuda
