// The one key under which the tactic cache (tactic_cache.h) and a plan's stored tactics
// (stored_tactic.h) know a convolution or linear layer, whatever runs it:
//   <runner>[@<library version>]:<GPU>:<precision>:n..c..h..w..k..r..s..p..x..u..x..d..x..g..
//   [:pitch<x>/<y>/<residual>]:act<n>:res<0|1>[:<variant>]
// so that an entry applies to nothing but the same code, library, GPU, shape and epilogue.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include "backends/cuda/convolution/conv_geometry.h"
#include "backends/cuda/tactics/stored_tactic.h"

namespace kiln::cuda {

struct TacticKey {
  std::string_view runner = {};     // the plan's API name (kApi*, stored_tactic.h)
  std::string_view version = {};    // the library's version; empty for kiln's own kernels
  std::string_view precision = {};  // of the operands: "f32", "f16" or "fp8"
  ConvGeometry geometry;            // a linear layer: n rows, c inputs, k outputs
  Act act = Act::kNone;
  bool residual = false;
  std::string_view variant = {};  // what only this runner tells apart (its own ':'-separated fields)
};

// The key on the current GPU.
std::string tactic_key(const TacticKey& key);
// The key on the GPU named `gpu`.
std::string tactic_key(const TacticKey& key, std::string_view gpu);

// The non-empty `fields` joined by ':', as a key's variant.
std::string key_fields(std::initializer_list<std::string> fields);

// The storage type's name in keys.
inline std::string_view elem_name(Elem elem) { return elem == Elem::kF32 ? "f32" : "f16"; }

}  // namespace kiln::cuda
