// One convolution (or linear layer, as a 1x1 convolution) on cuDNN's legacy API, NHWC, with its epilogue:
// y = act(conv(x) + bias (+ residual)). The fused path is cudnnConvolutionBiasActivationForward;
// where cuDNN cannot fuse (an activation other than ReLU, or no fused algorithm for the shape) the
// convolution runs alone and kiln's add_bias_act kernel applies the epilogue.
#pragma once

#include <cudnn.h>

#include <string>

#include "backends/cuda/convolution/conv_geometry.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

// A tactic of cuDNN's legacy API: `algorithm` is a cudnnConvolutionFwdAlgo_t; fused runs
// cudnnConvolutionBiasActivationForward (else cudnnConvolutionForward and kiln's epilogue kernel).
struct LegacyConvTactic {
  bool fused = true;
  int algorithm = 0;
  std::size_t workspace = 0;
  double milliseconds = 0;
};

// Takes part in pick_tactic() (tactic.h).
class CudnnConv {
 public:
  using Tactic = LegacyConvTactic;

  CudnnConv(cudnnHandle_t handle, Elem elem, const ConvGeometry& geometry, Act act, bool residual);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Identifies the convolution for the tactic cache.
  const std::string& key() const { return key_; }
  // Any stored algorithm applies: cuDNN refuses one it has no kernel for when it runs.
  bool restore(const TacticRecord& stored);
  // cuDNN's ranked algorithms, fused (where the activation allows) and unfused, that fit in
  // `workspace_limit` bytes; fails when cuDNN offers none.
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen) { tactic_ = chosen; }
  static TacticRecord record(const Tactic& t) {
    return {t.fused, t.algorithm, t.workspace, t.milliseconds, {}};
  }
  // Enqueues the convolution with the chosen tactic on the handle's stream.
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const;

 private:
  cudnnStatus_t launch(bool fused, int algorithm, const ConvBuffers& buffers, void* workspace,
                       std::size_t workspace_bytes, cudaStream_t stream) const;

  cudnnHandle_t handle_;
  Elem elem_;
  ConvGeometry g_;
  Act act_;
  bool residual_;
  bool can_fuse_;
  std::string key_;
  Tactic tactic_;
  cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, bias_desc_ = nullptr;
  cudnnFilterDescriptor_t w_desc_ = nullptr;
  cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
  cudnnActivationDescriptor_t act_desc_ = nullptr;
};

}  // namespace kiln::cuda
