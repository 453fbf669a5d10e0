// A convolution on cuDNN's graph (backend) API, fp16 NHWC: the engines cuDNN's heuristics rank for the
// operation graph, Hopper's own kernels among them (the legacy API reaches fewer). Two graphs are
// tried: the convolution with its epilogue fused (conv -> + bias [-> + residual] [-> ReLU, SiLU or
// sigmoid], f32 intermediates) and the convolution alone followed by kiln's add_bias_act kernel.
// Engines that compile kernels at run time (NVRTC) are skipped, so building an engine stays fast and
// repeatable, except in two cases. A fused SiLU or sigmoid epilogue, which no precompiled engine takes,
// is offered its heuristics' first runtime-compiled engine in the widest search (kGraphEngines), raced
// against the unfused graph, unless the runtime-fusion option is off (cuda_options.h). And FP8 layers (fp8:
// E4M3 input and weights on Hopper's FP8 tensor cores, f32 accumulation, conv -> x per-channel scale -> + f32
// bias [-> + residual] [-> ReLU] -> fp16), whose fused graphs only runtime-compiled engines take, unless
// the caller has a faster way that compiles nothing (kiln's Hopper kernel; fp8_runtime);
// unfused, the FP8 convolution writes f32 and kiln's scale_bias_act kernel applies the epilogue. Every
// candidate is timed with its epilogue kernel, if any.
#pragma once

#include <cudnn.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/convolution/cudnn_conv.h"
#include "backends/cuda/tactics/tactic.h"

namespace kiln::cuda {

// A tactic of cuDNN's graph API: `engine` indexes the heuristics' ranked engine configurations of the
// fused (conv -> epilogue) or the unfused operation graph; `plan` is the execution plan made from it.
struct GraphConvTactic {
  bool fused = true;
  bool runtime_compiled = false;  // the engine compiled its kernel at run time: the plan keeps it
  int engine = 0;
  std::size_t workspace = 0;
  double milliseconds = 0;
  cudnnBackendDescriptor_t plan = nullptr;  // owned by the CudnnGraphConv it came from
};

// Engine configurations per graph the widest search times.
inline constexpr std::size_t kGraphEngines = 4;
// Runtime-compiled engines an fp16 fused SiLU or sigmoid graph times (each compiles for about a second).
inline constexpr std::size_t kRuntimeFusedEngines = 1;

// Takes part in pick_tactic() (tactic.h).
class CudnnGraphConv {
 public:
  using Tactic = GraphConvTactic;

  // codes: the epilogue also writes y's E4M3 codes (ConvBuffers::codes); only the unfused graph is
  // offered then, since kiln's epilogue kernel writes them as the quantize kernel would.
  // engines: how many working engine configurations of each graph a timed search tries (the heuristics'
  // best first); a smaller number is part of the key, so a narrower search's choice never stands in for
  // a wider one's. runtime_fusion: a fused SiLU or sigmoid epilogue may take a runtime-compiled engine
  // (the runtime-fusion option, cuda_options.h). fp8_runtime: an FP8 graph may take runtime-compiled
  // engines (without them, only the precompiled ones; the key says so).
  CudnnGraphConv(cudnnHandle_t handle, Elem elem, const ConvGeometry& geometry, Act act, bool residual,
                 bool fp8 = false, bool codes = false, std::size_t engines = kGraphEngines,
                 bool runtime_fusion = true, bool fp8_runtime = true);
  ~CudnnGraphConv();
  CudnnGraphConv(const CudnnGraphConv&) = delete;
  CudnnGraphConv& operator=(const CudnnGraphConv&) = delete;

  const std::string& key() const { return key_; }
  // Re-creates the execution plan of a stored tactic; false if it no longer builds.
  bool restore(const TacticRecord& stored);
  // The first few working engines of each graph, the fused one first; none when cuDNN offers no engine
  // for either graph.
  void offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                        std::size_t workspace_limit);
  void use(const Tactic& chosen) { tactic_ = chosen; }
  // FP8 tactics keep their runtime-compiled execution plan, serialized, so restoring them compiles nothing.
  TacticRecord record(const Tactic& t) const;
  void enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream);

 private:
  using Desc = cudnnBackendDescriptor_t;
  Desc make(cudnnBackendDescriptorType_t type);
  // pitch: elements between neighbouring pixels (ConvGeometry's views); 0 for a packed tensor.
  Desc tensor(std::int64_t uid, const std::vector<std::int64_t>& dims, cudnnDataType_t type, bool is_virtual,
              std::int64_t pitch = 0);
  Desc operation_graph(bool fused);
  void add_epilogue(Desc conv_out, Desc y, const std::vector<std::int64_t>& y_dims, std::vector<Desc>& ops);
  // An engine configuration ranked by heuristics, and whether its engine compiles at run time.
  struct Config {
    Desc desc;
    bool runtime_compiled;
  };
  // Engine configurations ranked by heuristics, without run-time compiled ones where they are not
  // taken (the class comment).
  std::vector<Config> configs(Desc graph, bool fused);
  // An execution plan for `config`, or nothing if cuDNN cannot finalize it.
  std::optional<Desc> plan(Desc config);
  // A plan cuDNN serialized (record()), or nothing where it does not take it back.
  std::optional<Desc> deserialized_plan(const std::string& json);
  // The operation graph, or nothing where cuDNN does not support it.
  std::optional<Desc> try_operation_graph(bool fused);
  bool launch(bool fused, Desc plan, const ConvBuffers& buffers, void* workspace, cudaStream_t stream);

  cudnnHandle_t handle_;
  Elem elem_;
  ConvGeometry g_;
  Act act_;
  bool residual_;
  bool fp8_;
  bool can_fuse_;
  bool runtime_fusion_;  // the fused graph may take runtime-compiled engines
  bool fp8_runtime_;     // an FP8 graph may take runtime-compiled engines
  std::size_t engines_;
  std::string key_;
  Tactic tactic_;
  std::vector<Desc> owned_;  // every descriptor made, destroyed together
};

}  // namespace kiln::cuda
