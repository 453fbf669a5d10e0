// Helpers shared by the reference kernels: argument checks that name the operator, and the
// activation functions evaluated in double.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "core/tensor.h"
#include "graph/attributes.h"

namespace kiln::reference::detail {

inline void require_f32(std::string_view op, std::string_view role, const Tensor& tensor) {
  require(!tensor.empty(), op, ": ", role, " is an empty (default-constructed) tensor");
  require(tensor.dtype() == DType::kF32, op, ": expected ", role, " to be f32, got ",
          dtype_name(tensor.dtype()));
}

inline void require_rank(std::string_view op, std::string_view role, const Tensor& tensor, std::size_t rank) {
  require_f32(op, role, tensor);
  require(tensor.rank() == rank, op, ": expected ", role, " of rank ", rank, ", got shape ",
          shape_str(tensor.shape()));
}

// A per-channel parameter: exactly [channels].
inline void require_vector(std::string_view op, std::string_view role, const Tensor& tensor,
                           std::int64_t channels) {
  require_f32(op, role, tensor);
  require(tensor.rank() == 1 && tensor.dim(0) == channels, op, ": expected ", role, " of shape [", channels,
          "], got ", shape_str(tensor.shape()));
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Applied to the double accumulator before the single rounding to fp32.
inline double activate(double x, Activation activation) {
  switch (activation) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return x < 0.0 ? 0.0 : x;  // written so that NaN passes through
    case Activation::kSilu:
      return x * sigmoid(x);
    case Activation::kSigmoid:
      return sigmoid(x);
  }
  fail("unknown activation ", static_cast<int>(activation));
}

// Division rounding toward negative infinity, for window bounds that start in the padding.
inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return -floor_div(-a, b); }

}  // namespace kiln::reference::detail
