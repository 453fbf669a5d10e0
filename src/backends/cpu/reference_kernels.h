// The CPU reference kernels: one small, obviously correct function per operator, fp32 in and out,
// NCHW, accumulation in double. They are the oracle every faster kernel is tested against and the
// fallback for any operator a backend does not support. Clarity beats speed here.
#pragma once

#include "core/tensor.h"
#include "graph/attributes.h"

namespace kiln::reference {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor* bias, const ConvAttrs& attrs);
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& mean,
                  const Tensor& var, float epsilon);
Tensor activation(const Tensor& x, Activation activation);
Tensor add(const Tensor& a, const Tensor& b, Activation activation);
Tensor max_pool2d(const Tensor& x, const PoolAttrs& attrs);
Tensor avg_pool2d(const Tensor& x, const PoolAttrs& attrs);
Tensor global_avg_pool(const Tensor& x);
Tensor flatten(const Tensor& x);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor* bias);
Tensor radix_sum(const Tensor& x, const RadixAttrs& attrs);
Tensor radix_softmax(const Tensor& logits, const RadixAttrs& attrs);
Tensor radix_weighted_sum(const Tensor& x, const Tensor& weights, const RadixAttrs& attrs);

// Pooled output extent along one axis, PyTorch's rule (ceil_mode drops a window that would start
// entirely in the bottom/right padding).
std::int64_t pooled_extent(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                           std::int64_t pad_end, bool ceil_mode);

}  // namespace kiln::reference
