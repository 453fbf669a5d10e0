// What the backend runs on its own kernels; everything else runs on the reference kernels in NCHW.
#pragma once

#include <cstdint>

#include "graph/graph.h"

namespace kiln::onednn {

// Thrown while building a step the backend's own kernels cannot run; the node then falls back.
struct NotNative {};

bool native_support(const Graph& graph, const Node& node);

// The end padding that makes oneDNN's floor-division output extent equal `out` (PyTorch's extent,
// which with ceil_mode may need more than the declared padding).
std::int64_t pooling_end_padding(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                 std::int64_t begin, std::int64_t end, std::int64_t out);

}  // namespace kiln::onednn
