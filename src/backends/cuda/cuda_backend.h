// The CUDA backend ("cuda"): fp32 and fp16 plans on one NVIDIA GPU (built for sm_90). Convolutions run on
// cuDNN (NHWC), linear layers on cuBLASLt, everything else on kiln's kernels (one *_kernels.h per
// operator family, squeeze_mlp_kernels.h); see program.h. Compiling times kernels, so plans built for it
// store the chosen tactics. FP8 convolutions (E4M3 on Hopper's tensor cores) run among fp16 layers, and so
// do int8 ones on a Hopper GPU (kiln's own kernel). Without a usable GPU, compile fails with
// "no CUDA device: ...".
#pragma once

#include "backends/backend.h"

namespace kiln {

class CudaBackend final : public Backend {
 public:
  std::string_view name() const override { return "cuda"; }
  bool supports(const Graph& graph, const Node& node) const override;
  std::string unsupported_reason(const Graph& graph, const Node& node) const override;
  std::unique_ptr<CompiledModel> compile(const Graph& graph, const CompileOptions& options) const override;
  bool chooses_tactics() const override { return true; }
  std::string precision_refusal(Precision precision) const override;
  // FP8 and int8 layers run among fp16 ones (program/precision.h).
  Precision quantized_fallback(Precision) const override { return Precision::kF16; }
  std::vector<BackendFact> environment() const override;  // cuda_environment.cpp
  // The backend's options (cuda_options.h).
  BackendOptions resolve_options(const std::vector<std::string>& assignments) const override;
  std::string options_help() const override;
  const Device* device() const override;  // cuda_device.cpp
};

}  // namespace kiln
