#include "graph/attributes.h"

namespace kiln {

std::string_view activation_name(Activation activation) {
  switch (activation) {
    case Activation::kNone: return "none";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
    case Activation::kSigmoid: return "sigmoid";
  }
  return "unknown";
}

}  // namespace kiln
