// The CUDA backend's build options: choices that change what a plan runs, set with `kiln build
// --cuda-option NAME=VALUE` (or CompileOptions::backend_options) and recorded, every one of them, in the
// plan it builds (PlanInfo::backend_options), so that loading the plan compiles the program its build
// chose. Each default is what the backend runs when nobody asks; the other values exist to compare a
// plan against itself without one technique, or to test one kernel alone.
//
//   fp8-gemm=race|off|only   FP8 pointwise layers on cuBLASLt's FP8 GEMM: raced against the other
//                            candidates, never offered, or the only candidate where it takes the layer
//   fuse-quantize=on|off     quantize points written by their producers' epilogues (quantize_fusion.h),
//                            or each in a step of its own
//   runtime-fusion=on|off    fp16 SiLU and sigmoid convolutions offered cuDNN's runtime-compiled fused
//                            engines at opt level 3 (cudnn_graph_conv.h)
//   early-launch=on|off      kiln's kernels launched early (programmatic dependent launch,
//                            kernel_launch.cuh)
//   channel-views=on|off     concats and slices written and read in place (channel_views.h)
//   mma-conv=on|off          kiln's tensor-core kernel raced for fp16 layers of few channels (mma_conv.h)
//
// Host code with no CUDA header, so that the parser is testable anywhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cuda {

enum class Fp8GemmChoice : std::uint8_t { kRace, kOff, kOnly };

struct CudaOptions {
  Fp8GemmChoice fp8_gemm = Fp8GemmChoice::kRace;
  bool fuse_quantize = true;
  bool runtime_fusion = true;
  bool early_launch = true;
  bool channel_views = true;
  bool mma_conv = true;

  bool operator==(const CudaOptions&) const = default;
};

// Sets the option `name` to `value`; an error naming the option and the values it takes otherwise.
void set_cuda_option(CudaOptions& options, std::string_view name, std::string_view value);
// The same from "NAME=VALUE", as `kiln build --cuda-option` takes it.
void set_cuda_option(CudaOptions& options, std::string_view assignment);
// The defaults with each assignment ("NAME=VALUE") applied in order.
CudaOptions parse_cuda_options(const std::vector<std::string>& assignments);
// The defaults with each recorded NAME -> VALUE applied (a plan's record, CompileOptions).
CudaOptions cuda_options_from(const std::map<std::string, std::string>& values);
// Every option as NAME -> VALUE: what a plan records, and what cuda_options_from() reads back.
std::map<std::string, std::string> cuda_option_values(const CudaOptions& options);
// One line per option for --help: "fp8-gemm=race|off|only: ...", the default first among the values.
std::string cuda_options_help();

}  // namespace kiln::cuda
