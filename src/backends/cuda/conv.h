// One convolution (or linear layer, as a 1x1 convolution) on cuDNN, NHWC, with its epilogue:
// y = act(conv(x) + bias (+ residual)). The fused path is cudnnConvolutionBiasActivationForward;
// where cuDNN cannot fuse (an activation other than ReLU, or no fused algorithm for the shape) the
// convolution runs alone and kiln's add_bias_act kernel applies the epilogue.
#pragma once

#include <cudnn.h>

#include <string>

#include "backends/cuda/kernel_types.h"
#include "backends/cuda/tactic.h"

namespace kiln::cuda {

struct ConvGeometry {
  int n = 1, c = 1, h = 1, w = 1;  // input
  int k = 1, r = 1, s = 1;         // output channels, kernel extents
  int out_h = 1, out_w = 1;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, groups = 1;
  // Elements between neighbouring pixels of x, y and the residual where they are channel views into a
  // wider NHWC tensor (a concat's output written in place, a slice read in place: conv_views.h); 0 for
  // a packed tensor (c, k and k). Only cuDNN's graph API with its epilogue fused and kiln's mma kernel take
  // views.
  int x_pitch = 0, y_pitch = 0, residual_pitch = 0;
  bool packed() const { return x_pitch == 0 && y_pitch == 0 && residual_pitch == 0; }
};

// The buffers one convolution reads and writes (residual may be null).
struct ConvBuffers {
  const void* x = nullptr;
  const void* weight = nullptr;  // [k, r, s, c / groups]
  const void* bias = nullptr;    // [k]
  const void* residual = nullptr;
  void* y = nullptr;
  // FP8 layers (CudnnGraphConv with fp8): x and weight hold E4M3 codes, bias is f32, `scale` the f32
  // per-output-channel product of the input's and the weights' scales, and `accumulator` an f32 scratch
  // of [n * out_h * out_w, k] for when the epilogue runs in kiln's kernel instead of cuDNN's.
  const float* scale = nullptr;
  float* accumulator = nullptr;
  // CudnnGraphConv made with `codes`: its epilogue kernel also writes y's E4M3 codes (quantize_fusion.h);
  // an FP8 layer's y may then be null.
  E4m3Out codes;
};

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
