// The int8 instances of kiln's Hopper pointwise convolution kernel (gemm_conv_kernel.cuh), compiled apart
// from the other operand types'.
#include "backends/cuda/kernels/hopper/gemm_conv_kernel.cuh"

namespace kiln::cuda::hopper {

template cudaError_t launch_tile<Operand::kS8>(const GemmConvTile&, const GemmConvMaps&,
                                                 const EpilogueArgs&, cudaStream_t);

}  // namespace kiln::cuda::hopper
