// Inputs with NaN or Inf: refused unless the user asks to run them. A network's answer to such an input
// is no answer (one backend's kernels turn a NaN into a confident class, another's into NaN logits), so
// the same command would tell different stories on different backends.
#pragma once

#include <string>

#include "core/tensor.h"

namespace kiln::pipeline {

enum class NonFiniteInputs {
  kRefuse,  // an error naming the file and the first such value
  kAllow,   // `--allow-nonfinite`: run them; the outputs are whatever the backend makes of them
};

// Checks the f32 batch read from `source` (named in the error) under `policy`.
void check_finite_inputs(const Tensor& batch, const std::string& source, NonFiniteInputs policy);

}  // namespace kiln::pipeline
