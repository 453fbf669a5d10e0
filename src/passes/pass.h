// A graph pass: a named rewrite that keeps the function the graph computes. Each pass lives in its own
// file and is written in three steps: match a pattern, check that rewriting it is safe, apply the
// rewrite. Passes mark nodes dead and never renumber; the pass manager compacts once at the end.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace kiln {

// Level 1: exact clean-ups. Level 2: fusions, which may change fp32 rounding (folded weights are
// rounded once instead of the intermediate activation).
inline constexpr int kCleanupLevel = 1;
inline constexpr int kFusionLevel = 2;
inline constexpr int kMaxPassLevel = kFusionLevel;

// What a pass did, one human-readable line per rewrite ("folded layer1.0.bn1 into layer1.0.conv1").
// Empty when the pass found nothing to do.
using PassChanges = std::vector<std::string>;
using PassFunction = PassChanges (*)(Graph& graph);

struct Pass {
  std::string_view name;
  int level = kCleanupLevel;
  std::string_view summary;
  PassFunction run = nullptr;
};

// Every pass, in the order the pass manager runs them (pass_registry.cpp).
std::span<const Pass> registered_passes();

// The passes, one function each (one file each, named after the pass).
PassChanges eliminate_identity(Graph& graph);
PassChanges fold_constants(Graph& graph);
PassChanges merge_concat_slices(Graph& graph);
PassChanges eliminate_dead_nodes(Graph& graph);
PassChanges fold_batchnorm(Graph& graph);
PassChanges fuse_conv_activation(Graph& graph);
PassChanges fuse_add_activation(Graph& graph);

}  // namespace kiln
