#include "backends/cuda/cuda_options.h"

#include <array>
#include <cstddef>
#include <utility>

#include "core/error.h"

namespace kiln::cuda {
namespace {

constexpr std::string_view kFp8Gemm = "fp8-gemm";
// In Fp8GemmChoice's order, so that a value's index is its choice.
constexpr std::array<std::string_view, 3> kFp8GemmValues = {"race", "off", "only"};
constexpr std::string_view kFp8GemmHelp =
    "FP8 pointwise layers on cuBLASLt's FP8 GEMM: raced against the other kernels, never, or only that "
    "where it takes the layer";

// An on|off option and the field it sets.
struct Switch {
  std::string_view name;
  bool CudaOptions::*field;
  std::string_view help;
};

constexpr std::array<Switch, 5> kSwitches = {{
    {"fuse-quantize", &CudaOptions::fuse_quantize,
     "quantize points written by their producers' epilogues (off: a step of their own)"},
    {"runtime-fusion", &CudaOptions::runtime_fusion,
     "fp16 SiLU and sigmoid convolutions may take cuDNN's runtime-compiled fused engines (opt level 3)"},
    {"early-launch", &CudaOptions::early_launch,
     "kiln's kernels launched before the kernel ahead ends (programmatic dependent launch)"},
    {"channel-views", &CudaOptions::channel_views, "concats and slices written and read in place"},
    {"mma-conv", &CudaOptions::mma_conv, "kiln's tensor-core kernel raced for fp16 layers of few channels"},
}};

// "a, b or c".
template <std::size_t N>
std::string one_of(const std::array<std::string_view, N>& values) {
  std::string text;
  for (std::size_t i = 0; i < N; ++i) text += cat(i == 0 ? "" : i + 1 == N ? " or " : ", ", values[i]);
  return text;
}

std::string option_names() {
  std::array<std::string_view, kSwitches.size() + 1> names{kFp8Gemm};
  for (std::size_t i = 0; i < kSwitches.size(); ++i) names[i + 1] = kSwitches[i].name;
  return one_of(names);
}

// The values of an on|off option, its default first.
std::array<std::string_view, 2> switch_values(bool default_on) {
  return default_on ? std::array<std::string_view, 2>{"on", "off"}
                    : std::array<std::string_view, 2>{"off", "on"};
}

std::string_view on_off(bool on) { return on ? "on" : "off"; }

}  // namespace

void set_cuda_option(CudaOptions& options, std::string_view name, std::string_view value) {
  if (name == kFp8Gemm) {
    for (std::size_t i = 0; i < kFp8GemmValues.size(); ++i) {
      if (value != kFp8GemmValues[i]) continue;
      options.fp8_gemm = static_cast<Fp8GemmChoice>(i);
      return;
    }
    fail("cuda option ", name, ": expected ", one_of(kFp8GemmValues), ", got '", value, "'");
  }
  for (const Switch& s : kSwitches) {
    if (name != s.name) continue;
    require(value == "on" || value == "off", "cuda option ", name, ": expected on or off, got '", value, "'");
    options.*s.field = value == "on";
    return;
  }
  fail("unknown cuda option '", name, "': expected ", option_names());
}

void set_cuda_option(CudaOptions& options, std::string_view assignment) {
  const std::size_t equals = assignment.find('=');
  require(equals != std::string_view::npos && equals > 0, "cuda option '", assignment,
          "': expected NAME=VALUE, NAME one of ", option_names());
  set_cuda_option(options, assignment.substr(0, equals), assignment.substr(equals + 1));
}

CudaOptions parse_cuda_options(const std::vector<std::string>& assignments) {
  CudaOptions options;
  for (const std::string& assignment : assignments) set_cuda_option(options, assignment);
  return options;
}

CudaOptions cuda_options_from(const std::map<std::string, std::string>& values) {
  CudaOptions options;
  for (const auto& [name, value] : values) set_cuda_option(options, name, value);
  return options;
}

std::map<std::string, std::string> cuda_option_values(const CudaOptions& options) {
  std::map<std::string, std::string> values;
  values[std::string(kFp8Gemm)] = kFp8GemmValues[static_cast<std::size_t>(options.fp8_gemm)];
  for (const Switch& s : kSwitches) values[std::string(s.name)] = on_off(options.*s.field);
  return values;
}

std::string cuda_options_help() {
  const CudaOptions defaults;
  std::array<std::string_view, kFp8GemmValues.size()> fp8_values = kFp8GemmValues;
  std::swap(fp8_values[0], fp8_values[static_cast<std::size_t>(defaults.fp8_gemm)]);
  const auto values = [](const auto& list) {
    std::string text;
    for (const std::string_view v : list) text += cat(text.empty() ? "" : "|", v);
    return text;
  };
  std::string help = cat(kFp8Gemm, "=", values(fp8_values), ": ", kFp8GemmHelp, "\n");
  for (const Switch& s : kSwitches)
    help += cat(s.name, "=", values(switch_values(defaults.*s.field)), ": ", s.help, "\n");
  return help;
}

}  // namespace kiln::cuda
