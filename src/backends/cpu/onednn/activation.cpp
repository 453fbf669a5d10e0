#include "backends/cpu/onednn/activation.h"

#include "core/error.h"

namespace kiln::onednn {

Eltwise eltwise_for(Activation activation) {
  switch (activation) {
    case Activation::kRelu:
      return {dnnl::algorithm::eltwise_relu, 0.0f};
    case Activation::kSilu:
      return {dnnl::algorithm::eltwise_swish, 1.0f};  // x * sigmoid(1 * x)
    case Activation::kSigmoid:
      return {dnnl::algorithm::eltwise_logistic, 0.0f};
    case Activation::kNone:
      break;
  }
  fail("onednn backend: activation ", activation_name(activation), " has no eltwise form");
}

void append_activation(dnnl::post_ops& ops, Activation activation) {
  if (activation == Activation::kNone) return;
  const Eltwise e = eltwise_for(activation);
  ops.append_eltwise(1.0f, e.algorithm, e.alpha, 0.0f);
}

}  // namespace kiln::onednn
