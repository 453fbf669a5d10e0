#include "backends/cuda/convolution/cudnn_conv.h"

#include <vector>

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels/elementwise_kernels.h"

namespace kiln::cuda {
namespace {

cudnnDataType_t data_type(Elem e) { return e == Elem::kF32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF; }

}  // namespace

CudnnConv::CudnnConv(cudnnHandle_t handle, Elem elem, const ConvGeometry& g, Act act, bool residual)
    : handle_(handle), elem_(elem), g_(g), act_(act), residual_(residual) {
  // cuDNN fuses ReLU (any algorithm) and identity (implicit precomputed GEMM only).
  can_fuse_ = act == Act::kRelu || act == Act::kNone;
  const cudnnDataType_t type = data_type(elem);
  check(cudnnCreateTensorDescriptor(&x_desc_), "creating a tensor descriptor");
  check(cudnnCreateTensorDescriptor(&y_desc_), "creating a tensor descriptor");
  check(cudnnCreateTensorDescriptor(&bias_desc_), "creating a tensor descriptor");
  check(cudnnCreateFilterDescriptor(&w_desc_), "creating a filter descriptor");
  check(cudnnCreateConvolutionDescriptor(&conv_desc_), "creating a convolution descriptor");
  check(cudnnCreateActivationDescriptor(&act_desc_), "creating an activation descriptor");
  check(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NHWC, type, g.n, g.c, g.h, g.w),
        "describing a conv input");
  check(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, type, g.n, g.k, g.out_h, g.out_w),
        "describing a conv output");
  check(cudnnSetTensor4dDescriptor(bias_desc_, CUDNN_TENSOR_NHWC, type, 1, g.k, 1, 1), "describing a bias");
  check(cudnnSetFilter4dDescriptor(w_desc_, type, CUDNN_TENSOR_NHWC, g.k, g.c / g.groups, g.r, g.s),
        "describing a filter");
  // f32 and fp16 layers both accumulate in f32.
  check(cudnnSetConvolution2dDescriptor(conv_desc_, g.pad_h, g.pad_w, g.stride_h, g.stride_w, g.dilation_h,
                                        g.dilation_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "describing a convolution");
  check(cudnnSetConvolutionGroupCount(conv_desc_, g.groups), "setting a group count");
  // f32 plans stay in f32 arithmetic: FMA math forbids cuDNN's TF32 tensor-core paths.
  check(cudnnSetConvolutionMathType(conv_desc_, elem == Elem::kF32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH),
        "setting the math type");
  check(cudnnSetActivationDescriptor(act_desc_,
                                     act == Act::kRelu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                     CUDNN_NOT_PROPAGATE_NAN, 0.0),
        "describing an activation");
  int out_n = 0, out_c = 0, out_h = 0, out_w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(conv_desc_, x_desc_, w_desc_, &out_n, &out_c, &out_h, &out_w),
        "computing a conv output shape");
  require(out_n == g.n && out_c == g.k && out_h == g.out_h && out_w == g.out_w,
          "cuda backend: cuDNN's convolution output ", out_n, "x", out_c, "x", out_h, "x", out_w,
          " differs from the graph's ", g.n, "x", g.k, "x", g.out_h, "x", g.out_w);
  key_ = tactic_key({.runner = kApiLegacy,
                     .version = std::to_string(cudnnGetVersion()),
                     .precision = elem_name(elem),
                     .geometry = g,
                     .act = act,
                     .residual = residual});
}

CudnnConv::~CudnnConv() {
  cudnnDestroyTensorDescriptor(x_desc_);
  cudnnDestroyTensorDescriptor(y_desc_);
  cudnnDestroyTensorDescriptor(bias_desc_);
  cudnnDestroyFilterDescriptor(w_desc_);
  cudnnDestroyConvolutionDescriptor(conv_desc_);
  cudnnDestroyActivationDescriptor(act_desc_);
}

cudnnStatus_t CudnnConv::launch(bool fused, int algorithm, const ConvBuffers& b, void* workspace,
                                std::size_t workspace_bytes, cudaStream_t stream) const {
  const float one = 1.0f, zero = 0.0f;
  const auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(algorithm);
  if (fused) {
    // z is read with alpha2 = 0 when there is no residual (cuDNN still wants a valid tensor).
    return cudnnConvolutionBiasActivationForward(handle_, &one, x_desc_, b.x, w_desc_, b.weight, conv_desc_,
                                                 algo, workspace, workspace_bytes, residual_ ? &one : &zero,
                                                 y_desc_, residual_ ? b.residual : b.y, bias_desc_, b.bias,
                                                 act_desc_, y_desc_, b.y);
  }
  const cudnnStatus_t status =
      cudnnConvolutionForward(handle_, &one, x_desc_, b.x, w_desc_, b.weight, conv_desc_, algo, workspace,
                              workspace_bytes, &zero, y_desc_, b.y);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  const cudaError_t epilogue =
      add_bias_act(b.y, b.residual, b.bias, b.y, elem_, static_cast<std::int64_t>(g_.n) * g_.out_h * g_.out_w,
                   g_.k, act_, stream);
  return epilogue == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

bool CudnnConv::restore(const TacticRecord& stored) {
  tactic_ = {stored.fused, stored.algorithm, stored.workspace, stored.milliseconds};
  return true;
}

void CudnnConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void* workspace,
                                 std::size_t workspace_limit) {
  int count = 0;
  check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count), "counting conv algorithms");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(count));
  int returned = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_desc_, w_desc_, conv_desc_, y_desc_, count,
                                               &returned, perf.data()),
        cat("asking cuDNN for algorithms (", key_, ")"));
  std::vector<Tactic> candidates;
  for (int i = 0; i < returned; ++i) {
    const auto& p = perf[static_cast<std::size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > workspace_limit) continue;
    const int algorithm = static_cast<int>(p.algo);
    if (can_fuse_) candidates.push_back({true, algorithm, p.memory, 0});
    candidates.push_back({false, algorithm, p.memory, 0});
  }
  require(!candidates.empty(), "cuda backend: cuDNN offers no algorithm for convolution ", key_);
  for (const Tactic& candidate : candidates) {
    // A launch cuDNN refuses (no fused kernel for this algorithm and shape) is not a candidate.
    const auto run = [&](cudaStream_t s) {
      return launch(candidate.fused, candidate.algorithm, buffers, workspace, candidate.workspace, s) ==
             CUDNN_STATUS_SUCCESS;
    };
    if (!race.offer(candidate, run)) return;
  }
}

void CudnnConv::enqueue(const ConvBuffers& buffers, void* workspace, cudaStream_t stream) const {
  check(launch(tactic_.fused, tactic_.algorithm, buffers, workspace, tactic_.workspace, stream),
        cat("running convolution ", key_));
}

}  // namespace kiln::cuda
