// The CUDA kernels of ResNeSt's split attention besides its global pool (pooling_kernels.h) and its gate
// (squeeze_mlp_kernels.h); see kernel_types.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/kernels/kernel_types.h"

namespace kiln::cuda {

// x [rows, radix * c] -> y [rows, c], the sum over the radix.
cudaError_t radix_sum(const void* x, void* y, Elem e, std::int64_t rows, int radix, int c,
                      cudaStream_t stream);

// logits [n, cardinality][radix][c / cardinality] -> weights [n, radix][c] (softmax over the radix;
// sigmoid when radix is 1).
cudaError_t radix_softmax(const void* logits, void* weights, Elem e, int n, int radix, int cardinality, int c,
                          cudaStream_t stream);

// y[n, hw, c] = sum_r x[n, hw, r * c + ch] * w(n, r, ch), where w is either a weights tensor laid out
// [n, radix][c] (`from_logits` false) or the softmax of fc2's logits, computed on the fly (true). With
// `codes`, also y's E4M3 codes (y may then be null).
cudaError_t radix_weighted_sum(const void* x, const void* w, void* y, Elem e, int n, int hw, int radix,
                               int cardinality, int c, bool from_logits, cudaStream_t stream,
                               const CodesOut& codes = {});

}  // namespace kiln::cuda
