// The CUDA backend's build options (backends/cuda/cuda_options.h): every name and value parsed, each bad
// one refused in one line naming the option and the values it takes, the record a plan keeps read back to
// the same options, and the backend resolving a build's options. Host code only: runs without a GPU.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "backends/backend.h"

#if KILN_HAVE_CUDA
#include "backends/cuda/cuda_options.h"
#endif

namespace kiln {
namespace {

#if KILN_HAVE_CUDA
using cuda::CudaOptions;
using cuda::Fp8GemmChoice;

// The message of the error parsing `assignments` gives, or "" where none is thrown.
std::string parse_error(const std::vector<std::string>& assignments) {
  try {
    cuda::parse_cuda_options(assignments);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(CudaOptionsTest, DefaultsRunEveryTechnique) {
  const CudaOptions options = cuda::parse_cuda_options({});
  EXPECT_EQ(options.fp8_gemm, Fp8GemmChoice::kRace);
  EXPECT_TRUE(options.fuse_quantize);
  EXPECT_TRUE(options.runtime_fusion);
  EXPECT_TRUE(options.early_launch);
  EXPECT_TRUE(options.channel_views);
  EXPECT_TRUE(options.mma_conv);
}

TEST(CudaOptionsTest, EachNameSetsItsField) {
  CudaOptions off = cuda::parse_cuda_options({"fuse-quantize=off", "runtime-fusion=off", "early-launch=off",
                                              "channel-views=off", "mma-conv=off", "fp8-gemm=off"});
  EXPECT_EQ(off.fp8_gemm, Fp8GemmChoice::kOff);
  EXPECT_FALSE(off.fuse_quantize);
  EXPECT_FALSE(off.runtime_fusion);
  EXPECT_FALSE(off.early_launch);
  EXPECT_FALSE(off.channel_views);
  EXPECT_FALSE(off.mma_conv);
  // One at a time, so that no name sets another's field.
  for (const std::string name :
       {"fuse-quantize", "runtime-fusion", "early-launch", "channel-views", "mma-conv"}) {
    CudaOptions one = cuda::parse_cuda_options({name + "=off"});
    std::map<std::string, std::string> values = cuda::cuda_option_values(one);
    for (const auto& [other, value] : values) {
      if (other == "fp8-gemm") continue;
      EXPECT_EQ(value, other == name ? "off" : "on") << name << " set " << other;
    }
  }
  EXPECT_EQ(cuda::parse_cuda_options({"fp8-gemm=only"}).fp8_gemm, Fp8GemmChoice::kOnly);
  // Later assignments win, as with repeated command-line options.
  EXPECT_EQ(cuda::parse_cuda_options({"fp8-gemm=off", "fp8-gemm=race"}).fp8_gemm, Fp8GemmChoice::kRace);
  EXPECT_TRUE(cuda::parse_cuda_options({"mma-conv=off", "mma-conv=on"}).mma_conv);
}

TEST(CudaOptionsTest, BadAssignmentsNameTheOptionAndItsValues) {
  EXPECT_EQ(parse_error({"fp8-gemm=yes"}), "cuda option fp8-gemm: expected race, off or only, got 'yes'");
  EXPECT_EQ(parse_error({"fp8-gemm="}), "cuda option fp8-gemm: expected race, off or only, got ''");
  EXPECT_EQ(parse_error({"early-launch=1"}), "cuda option early-launch: expected on or off, got '1'");
  EXPECT_EQ(parse_error({"channel-views=ON"}), "cuda option channel-views: expected on or off, got 'ON'");
  const std::string names =
      "fp8-gemm, fuse-quantize, runtime-fusion, early-launch, channel-views or mma-conv";
  EXPECT_EQ(parse_error({"views=on"}), "unknown cuda option 'views': expected " + names);
  EXPECT_EQ(parse_error({"mma-conv"}), "cuda option 'mma-conv': expected NAME=VALUE, NAME one of " + names);
  EXPECT_EQ(parse_error({"=on"}), "cuda option '=on': expected NAME=VALUE, NAME one of " + names);
  EXPECT_EQ(parse_error({"mma-conv=on", "KILN_CUDA_VIEWS=0"}),
            "unknown cuda option 'KILN_CUDA_VIEWS': expected " + names);
}

TEST(CudaOptionsTest, TheRecordReadsBackToTheSameOptions) {
  const CudaOptions defaults;
  const std::map<std::string, std::string> record = cuda::cuda_option_values(defaults);
  EXPECT_EQ(record, (std::map<std::string, std::string>{{"channel-views", "on"},
                                                        {"early-launch", "on"},
                                                        {"fp8-gemm", "race"},
                                                        {"fuse-quantize", "on"},
                                                        {"mma-conv", "on"},
                                                        {"runtime-fusion", "on"}}));
  EXPECT_EQ(cuda::cuda_options_from(record), defaults);
  const CudaOptions changed =
      cuda::parse_cuda_options({"fp8-gemm=only", "channel-views=off", "early-launch=off"});
  EXPECT_EQ(cuda::cuda_options_from(cuda::cuda_option_values(changed)), changed);
  EXPECT_FALSE(changed == defaults);
  // An older plan records none: the defaults. A record naming an option this kiln lacks is refused.
  EXPECT_EQ(cuda::cuda_options_from({}), defaults);
  EXPECT_THROW(cuda::cuda_options_from({{"tile-size", "64"}}), Error);
}

TEST(CudaOptionsTest, HelpListsEveryOptionWithItsDefaultFirst) {
  const std::string help = cuda::cuda_options_help();
  for (const char* line : {"fp8-gemm=race|off|only: ", "fuse-quantize=on|off: ", "runtime-fusion=on|off: ",
                           "early-launch=on|off: ", "channel-views=on|off: ", "mma-conv=on|off: "})
    EXPECT_NE(help.find(line), std::string::npos) << line << " in\n" << help;
}

TEST(CudaOptionsTest, TheBackendResolvesEveryOptionAndOthersTakeNone) {
  const BackendOptions resolved = make_backend("cuda")->resolve_options({"mma-conv=off"});
  EXPECT_EQ(resolved.size(), 6u);
  EXPECT_EQ(resolved.at("mma-conv"), "off");
  EXPECT_EQ(resolved.at("fp8-gemm"), "race");
  EXPECT_THROW(make_backend("cuda")->resolve_options({"mma-conv=maybe"}), Error);
  EXPECT_TRUE(make_backend("cpu-reference")->resolve_options({}).empty());
  try {
    make_backend("cpu-reference")->resolve_options({"mma-conv=off"});
    ADD_FAILURE() << "the cpu-reference backend took an option";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the cpu-reference backend takes no options, got 'mma-conv=off'");
  }
}
#endif  // KILN_HAVE_CUDA

}  // namespace
}  // namespace kiln
