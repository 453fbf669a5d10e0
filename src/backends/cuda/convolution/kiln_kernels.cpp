#include "backends/cuda/convolution/kiln_kernels.h"

#include <algorithm>
#include <string_view>

#include "backends/cuda/convolution/depthwise_conv.h"
#include "backends/cuda/convolution/hopper_conv.h"
#include "backends/cuda/convolution/mma_conv.h"
#include "backends/cuda/convolution/narrow_conv.h"
#include "backends/cuda/tactics/stored_tactic.h"

namespace kiln::cuda {

namespace {

constexpr KilnConvKernel kKernels[] = {
    {kApiKilnMma, true, offer_mma_conv},
    {kApiKilnHopper, true, offer_hopper_conv},
    {kApiKilnDepthwise, false, offer_depthwise_conv},
    {kApiKilnNarrow, false, offer_narrow_conv},
};

}  // namespace

std::span<const KilnConvKernel> kiln_conv_kernels() { return kKernels; }

const KilnConvKernel* find_kiln_conv_kernel(std::string_view api) {
  const auto* it = std::ranges::find_if(kKernels, [&](const KilnConvKernel& k) { return api == k.api; });
  return it == std::end(kKernels) ? nullptr : it;
}

}  // namespace kiln::cuda
