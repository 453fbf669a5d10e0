#include "backends/cpu/onednn/precision.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"

namespace kiln::onednn {

bool precision_supported(Precision precision) {
  switch (precision) {
    case Precision::kF32:
    case Precision::kF16:
    case Precision::kF8:
      return true;
  }
  return false;
}

Tensor prepare_constant(const Tensor& constant, Precision precision) {
  Tensor values = constant.dtype() == DType::kF32 ? constant.clone() : constant.to(DType::kF32);
  if (precision == Precision::kF16) {
    float* data = values.mutable_f32().data();
    round_to_storage(data, data, values.f32().size(), precision);
  }
  return values;
}

bool reads_rounded(Precision precision) { return precision == Precision::kF16; }

bool writes_rounded(Precision precision) { return precision != Precision::kF32; }

void round_to_storage(const float* in, float* out, std::size_t count, Precision precision) {
  switch (precision) {
    case Precision::kF32:
      if (in != out) std::copy(in, in + count, out);
      return;
    case Precision::kF16:
    case Precision::kF8:
      for (std::size_t i = 0; i < count; ++i) out[i] = round_to_f16(in[i]);
      return;
  }
}

}  // namespace kiln::onednn
