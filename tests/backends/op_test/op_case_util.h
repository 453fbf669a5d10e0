// Helpers the case lists share: a case from a graph-building function, its fp16 twin, and an
// operator's input taken from the graph input itself or from a convolution of it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "../onednn_graph_util.h"
#include "core/error.h"
#include "op_case.h"

namespace kiln::testing {

using GraphBuilder = std::function<void(SmallGraph&)>;

// A case whose graph `build` makes; every graph input gets seeded uniform values in
// [-input_range, input_range) with dim 0 set to `batch`.
OpCase graph_case(std::string name, OpKind op, std::int64_t batch, GraphBuilder build,
                  float input_range = 1.0f);

// The same case with every node in fp16 (named NAME_fp16).
OpCase fp16_case(const OpCase& c);

// The operator's input: `x` itself (a row-major graph input) or a 1x1 convolution of it, which a
// backend may keep in a layout of its own (oneDNN's blocked formats, cuda's NHWC).
ValueId source(SmallGraph& g, ValueId x, bool behind_conv);
inline const char* source_suffix(bool behind_conv) { return behind_conv ? "_behind_conv" : ""; }

}  // namespace kiln::testing
