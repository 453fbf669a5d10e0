// The one list of graph passes, in the order they run. Clean-ups come first so the fusions see
// identity nodes bypassed and dead branches gone (slices a concat no longer reads among them); BN folding
// precedes activation fusion so that conv -> bn -> relu ends as one conv with a fused relu.
#include <array>

#include "passes/pass.h"

namespace kiln {

namespace {

constexpr std::array kPasses = {
    Pass{"eliminate_identity", kCleanupLevel,
         "bypass nodes that compute the identity (1x1 stride-1 unpadded pooling, flatten of a 2-D tensor, "
         "radix sum over one split, activation 'none')",
         &eliminate_identity},
    Pass{"fold_constants", kCleanupLevel,
         "evaluate nodes whose inputs are all constants with the reference kernels and store the result",
         &fold_constants},
    Pass{"merge_concat_slices", kCleanupLevel,
         "read neighbouring channel slices of one tensor in a concat as one slice, or as the tensor itself",
         &merge_concat_slices},
    Pass{"eliminate_dead_nodes", kCleanupLevel,
         "remove nodes whose output nothing reads and is not a graph output", &eliminate_dead_nodes},
    Pass{"fold_batchnorm", kFusionLevel,
         "fold an inference batch norm into the convolution that alone feeds it (scaled weights, new bias)",
         &fold_batchnorm},
    Pass{"fuse_conv_activation", kFusionLevel,
         "fuse a relu/silu/sigmoid into the convolution that alone feeds it", &fuse_conv_activation},
    Pass{"fuse_add_activation", kFusionLevel, "fuse a relu into the residual add that alone feeds it",
         &fuse_add_activation},
};

}  // namespace

std::span<const Pass> registered_passes() { return kPasses; }

}  // namespace kiln
