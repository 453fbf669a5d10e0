// fold_dequantized_weights: FP8 weights arrive as E4M3 codes behind a kDequantize of constants. A backend
// that computes in f32 (the oneDNN CPU backend) replaces each such node by the constant it always
// computes: codes x per-channel scales in f32, exactly as the reference kernel does. Not one of the
// registered passes (pass.h): a plan keeps its codes and scales, and backends with FP8 kernels read them.
#pragma once

#include "graph/graph.h"
#include "passes/pass.h"

namespace kiln {

// One line per folded dequantize point. Marks the nodes dead; the caller compacts.
PassChanges fold_dequantized_weights(Graph& graph);

}  // namespace kiln
