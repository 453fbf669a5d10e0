// kiln's activations as oneDNN eltwise algorithms (for post-ops and eltwise primitives).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "graph/attributes.h"

namespace kiln::onednn {

struct Eltwise {
  dnnl::algorithm algorithm;
  float alpha = 0.0f;
};

// kNone has no eltwise form; every other activation does.
Eltwise eltwise_for(Activation activation);
// Appends `activation` as an eltwise post-op (nothing for kNone).
void append_activation(dnnl::post_ops& ops, Activation activation);

}  // namespace kiln::onednn
