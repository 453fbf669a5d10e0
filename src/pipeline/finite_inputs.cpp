#include "pipeline/finite_inputs.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln::pipeline {

void check_finite_inputs(const Tensor& batch, const std::string& source, NonFiniteInputs policy) {
  if (policy == NonFiniteInputs::kAllow) return;
  const auto values = batch.f32();
  const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
  if (bad == values.end()) return;
  const auto index = bad - values.begin();
  const std::int64_t per_row = batch.rank() > 0 && batch.dim(0) > 0 ? batch.numel() / batch.dim(0) : 1;
  fail(source, ": input value ", *bad, " at element ", index % per_row, " of row ", index / per_row,
       ": inputs must be finite (backends differ on NaN and Inf); --allow-nonfinite runs them anyway");
}

}  // namespace kiln::pipeline
