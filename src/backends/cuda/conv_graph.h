// A convolution on cuDNN's graph (backend) API, fp16 NHWC: the engines cuDNN's heuristics rank for the
// operation graph, Hopper's own kernels among them (the legacy API reaches fewer). Two graphs are
// tried: the convolution with its epilogue fused (conv -> + bias [-> + residual] [-> ReLU], f32
// intermediates) and the convolution alone followed by kiln's add_bias_act kernel. Engines that
// compile kernels at run time (NVRTC) are skipped, so building an engine stays fast and repeatable,
// except for FP8 layers (fp8: E4M3 input and weights on Hopper's FP8 tensor cores, f32 accumulation,
// conv -> x per-channel scale -> + f32 bias [-> + residual] [-> ReLU] -> fp16), whose fused graphs only
// runtime-compiled engines take; unfused, the FP8 convolution writes f32 and kiln's scale_bias_act
// kernel applies the epilogue.
#pragma once

#include <cudnn.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/conv.h"

namespace kiln::cuda {

class CudnnGraphConv {
 public:
  CudnnGraphConv(cudnnHandle_t handle, Elem elem, const ConvGeometry& geometry, Act act, bool residual,
                 bool fp8 = false);
  ~CudnnGraphConv();
  CudnnGraphConv(const CudnnGraphConv&) = delete;
  CudnnGraphConv& operator=(const CudnnGraphConv&) = delete;

  const std::string& key() const { return key_; }
  // Heuristics' first working engine (search false) or the fastest of the first few of each graph,
  // timed as CUDA graph replays. Nothing when cuDNN offers no engine for either graph.
  std::optional<ConvTactic> choose(bool search, const ConvBuffers& buffers, void* workspace,
                                   std::size_t workspace_limit, cudaStream_t stream);
  // Re-creates the plan of a cached tactic; false if it no longer builds.
  bool set_tactic(const ConvTactic& tactic);
  const ConvTactic& tactic() const { return tactic_; }
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream);

 private:
  using Desc = cudnnBackendDescriptor_t;
  Desc make(cudnnBackendDescriptorType_t type);
  Desc tensor(std::int64_t uid, const std::vector<std::int64_t>& dims, cudnnDataType_t type, bool is_virtual);
  Desc operation_graph(bool fused);
  // Engine configurations ranked by heuristics, without run-time compiled ones.
  std::vector<Desc> configs(Desc graph);
  // An execution plan for `config`, or nothing if cuDNN cannot finalize it.
  std::optional<Desc> plan(Desc config);
  bool launch(bool fused, Desc plan, const ConvBuffers& buffers, void* workspace, cudaStream_t stream);

  cudnnHandle_t handle_;
  Elem elem_;
  ConvGeometry g_;
  Act act_;
  bool residual_;
  bool fp8_;
  bool can_fuse_;
  std::string key_;
  ConvTactic tactic_;
  Desc plan_ = nullptr;
  std::vector<Desc> owned_;  // every descriptor made, destroyed together
};

}  // namespace kiln::cuda
