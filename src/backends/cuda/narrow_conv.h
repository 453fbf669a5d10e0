// A convolution over few input channels (an RGB stem) on kiln's own kernel (narrow_conv_kernels.h), a
// candidate raced against cuDNN's in pick_tactic() (tactic.h) when tactics are timed. Its epilogue (bias,
// residual, any activation) is always fused.
#pragma once

#include <string>

#include "backends/cuda/conv.h"
#include "backends/cuda/narrow_conv_kernels.h"
#include "backends/cuda/tactic.h"
#include "core/tensor.h"

namespace kiln::cuda {

// The kernel has no variants: a tactic is only its time.
struct NarrowConvTactic {
  double milliseconds = 0;
};

// Takes part in pick_tactic() (tactic.h). ConvBuffers::weight holds [r, s, c, k] weights
// (narrow_conv_taps()); an RGB stem (narrow_conv_is_stem()) runs its own kernel on the host copies of its
// weights and bias given to the constructor.
class KilnNarrowConv {
 public:
  using Tactic = NarrowConvTactic;

  // Whether the kernel computes `geometry`: dense, within the limits of narrow_conv_kernels.h.
  static bool takes(const ConvGeometry& geometry);

  // `taps` [r, s, c, k] and `bias` [k]: the weights as ConvBuffers holds them, f32 on the host.
  KilnNarrowConv(Elem elem, const ConvGeometry& geometry, Act act, bool residual, const Tensor& taps,
                 const Tensor& bias);

  const std::string& key() const { return key_; }
  bool restore(const TacticRecord&) { return true; }  // nothing to re-create
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic&) {}
  static TacticRecord record(const Tactic& t) { return {true, 0, 0, t.milliseconds, {}}; }
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const;

 private:
  cudaError_t launch(const ConvBuffers& buffers, cudaStream_t stream) const;

  Elem elem_;
  NarrowConvShape shape_;
  Act act_;
  bool residual_;
  Tensor stem_taps_, stem_bias_;  // f32, for a stem's kernel only
  std::string key_;
};

}  // namespace kiln::cuda
