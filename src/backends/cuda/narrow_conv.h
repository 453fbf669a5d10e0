// An RGB stem convolution on kiln's own kernel (narrow_conv_kernels.h), a candidate raced against cuDNN's
// in pick_tactic() (tactic.h) when tactics are timed. Its epilogue (bias, any activation) is always
// fused.
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

// Takes part in pick_tactic() (tactic.h). The kernel runs on the host copies of the weights and bias given
// to the constructor.
class KilnNarrowConv {
 public:
  using Tactic = NarrowConvTactic;

  // Whether the kernel computes `geometry` with or without a residual: a dense RGB stem
  // (narrow_conv_is_stem()).
  static bool takes(const ConvGeometry& geometry, bool residual);

  // `taps` [r, s, c, k] (narrow_conv_taps()) and `bias` [k], f32 on the host.
  KilnNarrowConv(Elem elem, const ConvGeometry& geometry, Act act, const Tensor& taps, const Tensor& bias);

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
  Tensor taps_, bias_;  // f32, rounded to the storage type as a device copy would be
  std::string key_;
};

}  // namespace kiln::cuda
