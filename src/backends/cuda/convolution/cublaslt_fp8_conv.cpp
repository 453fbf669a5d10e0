#include "backends/cuda/convolution/cublaslt_fp8_conv.h"

#include <cstdint>

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {
namespace {

// cuBLASLt's FP8 kernels read and write 16-byte aligned rows: C (E4M3 codes) and K (also fp16) must
// hold whole 16-element groups.
constexpr int kChannelMultiple = 16;
// The alignment the heuristics assume by default; buffers that have less get no candidate.
constexpr std::uintptr_t kBufferAlignment = 256;

// False where cuBLASLt refuses the attribute; `value` must have its documented type (the size is checked).
template <typename T>
bool set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)) == CUBLAS_STATUS_SUCCESS;
}

// A packed column-major matrix; empty where cuBLASLt refuses it.
CublasLtLayout packed_column_major(cudaDataType_t type, std::int64_t rows, std::int64_t cols) {
  cublasLtMatrixLayout_t layout = nullptr;
  if (cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                 static_cast<std::uint64_t>(cols), rows) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  return CublasLtLayout(layout);
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kBufferAlignment == 0; }

std::int64_t gemm_rows(const ConvGeometry& g) { return std::int64_t{g.n} * g.out_h * g.out_w; }

}  // namespace

bool CublasLtFp8Conv::takes(const ConvGeometry& g, Act act) {
  // 1x1 at stride 1 keeps the extents exactly when nothing is padded.
  const bool pointwise = g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
                         g.pad_w == 0 && g.out_h == g.h && g.out_w == g.w;
  const bool aligned_channels =
      g.c > 0 && g.k > 0 && g.c % kChannelMultiple == 0 && g.k % kChannelMultiple == 0;
  return pointwise && g.groups == 1 && g.n > 0 && aligned_channels &&
         (act == Act::kNone || act == Act::kRelu);
}

CublasLtFp8Conv::CublasLtFp8Conv(cublasLtHandle_t handle, const ConvGeometry& geometry,
                                 const Fp8GemmConfig& config, const Fp8GemmScales& scales)
    : handle_(handle), config_(config), channel_scale_(scales.channel) {
  const bool outer = config.scaling == Fp8Scaling::kOuterVector;
  const bool scalar = config.scaling == Fp8Scaling::kScalar;
  key_ = tactic_key({.runner = kApiCublasLtFp8,
                     .version = std::to_string(cublasLtGetVersion()),
                     .precision = "fp8",
                     .geometry = geometry,
                     .act = config.act,
                     .residual = config.residual,
                     .variant = outer    ? "outer"
                                : scalar ? "scalar"
                                         : "alpha"});
  const bool scales_given =
      scales.channel != nullptr && (!outer || scales.row != nullptr) && (!scalar || scales.uniform);
  described_ = takes(geometry, config.act) && scales_given && describe(geometry, config.act, scales);
}

CublasLtFp8Conv::~CublasLtFp8Conv() = default;  // the descriptors' owners destroy them

bool CublasLtFp8Conv::describe(const ConvGeometry& g, Act act, const Fp8GemmScales& scales) {
  cublasLtMatmulDesc_t desc = nullptr;
  // f32 accumulation and scaling, the precision of cuDNN's FP8 path.
  if (cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
  matmul_desc_.reset(desc);
  const auto epilogue =
      static_cast<std::uint32_t>(act == Act::kRelu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS);
  const bool configured =
      set(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T)) &&
      set(desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N)) &&
      set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue) &&
      set(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(CUDA_R_16F)) &&
      describe_scaling(scales);
  // Column-major views of the row-major tensors, as in CublasLtLinear: W [K, C] is A = [C x K] (used
  // transposed), x [rows, C] is B = [C x rows], the residual [rows, K] is C = [K x rows] and y D, of the
  // same extents.
  const std::int64_t rows = gemm_rows(g);
  weight_layout_ = packed_column_major(CUDA_R_8F_E4M3, g.c, g.k);
  x_layout_ = packed_column_major(CUDA_R_8F_E4M3, g.c, rows);
  c_layout_ = packed_column_major(CUDA_R_16F, g.k, rows);
  d_layout_ = packed_column_major(CUDA_R_16F, g.k, rows);
  preference_ = heuristic_preference();
  return configured && weight_layout_ && x_layout_ && c_layout_ && d_layout_;
}

// The per-channel scale (Fp8Scaling).
bool CublasLtFp8Conv::describe_scaling(const Fp8GemmScales& scales) {
  cublasLtMatmulDesc_t desc = matmul_desc_.get();
  bool configured = true;
  if (config_.scaling == Fp8Scaling::kOuterVector) {
    const auto outer_vector = static_cast<std::int32_t>(CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F);
    configured = set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, outer_vector) &&
                 set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, outer_vector) &&
                 set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(scales.channel)) &&
                 set(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(scales.row));
  } else if (config_.scaling == Fp8Scaling::kAlphaVector) {
    // alpha: a device vector of one factor per row of D (an output channel); beta: a host scalar.
    const auto mode = static_cast<std::int32_t>(CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST);
    configured = set(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, mode);
  } else {
    // A's scale in the default tensor-wide mode reads one f32: the vector's first, every channel's.
    configured = set(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(scales.channel));
  }
  return configured;
}

std::vector<cublasLtMatmulHeuristicResult_t> CublasLtFp8Conv::heuristic_results() {
  if (!described_) return {};
  return ranked_algorithms(handle_, matmul_desc_.get(), weight_layout_.get(), x_layout_.get(),
                           c_layout_.get(), d_layout_.get(), preference_.get());
}

cublasStatus_t CublasLtFp8Conv::matmul(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes,
                                       const Fp8GemmBuffers& b, void* workspace, cudaStream_t stream) {
  // The bias pointer lives in the descriptor, so it is set on every call: buffers may change.
  const void* bias = b.bias;
  const cublasStatus_t status = cublasLtMatmulDescSetAttribute(
      matmul_desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  // The residual is C with beta = 1. Without one beta = 0 and C is not read: it names y only because
  // cuBLASLt wants a matrix there.
  const float one = 1.0f, beta = config_.residual ? 1.0f : 0.0f;
  const void* alpha =
      config_.scaling == Fp8Scaling::kAlphaVector ? channel_scale_ : static_cast<const void*>(&one);
  const void* c = config_.residual ? b.residual : b.y;
  return cublasLtMatmul(handle_, matmul_desc_.get(), alpha, b.weight, weight_layout_.get(), b.x,
                        x_layout_.get(), &beta, c, c_layout_.get(), b.y, d_layout_.get(), &algo, workspace,
                        workspace_bytes, stream);
}

bool CublasLtFp8Conv::usable(const Fp8GemmBuffers& b) const {
  return aligned(b.x) && aligned(b.weight) && aligned(b.bias) && b.y != nullptr && aligned(b.y) &&
         (b.residual != nullptr) == config_.residual && aligned(b.residual);
}

void CublasLtFp8Conv::offer_candidates(TacticRace<Tactic>& race, const Fp8GemmBuffers& buffers,
                                       void* workspace, std::size_t workspace_limit) {
  if (!usable(buffers)) return;
  const std::vector<cublasLtMatmulHeuristicResult_t> results = heuristic_results();
  for (std::size_t index = 0; index < results.size(); ++index) {
    const cublasLtMatmulHeuristicResult_t& result = results[index];
    if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > workspace_limit) continue;
    const Tactic tactic{true, static_cast<int>(index), result.workspaceSize, 0, result.algo};
    const auto run = [&](cudaStream_t s) {
      return matmul(result.algo, result.workspaceSize, buffers, workspace, s) == CUBLAS_STATUS_SUCCESS;
    };
    if (!race.offer(tactic, run)) return;
  }
}

void CublasLtFp8Conv::use(const Tactic& chosen) {
  tactic_ = chosen;
  has_algo_ = true;
}

bool CublasLtFp8Conv::restore(const TacticRecord& stored) {
  if (!stored.fused) return false;  // the epilogue is always cuBLASLt's
  const std::optional<MatmulTactic> tactic = stored_matmul_tactic(heuristic_results(), stored);
  if (tactic) use(*tactic);
  return tactic.has_value();
}

void CublasLtFp8Conv::enqueue(const Fp8GemmBuffers& buffers, void* workspace, cudaStream_t stream) {
  require(has_algo_, "cuda backend: FP8 GEMM ", key_, " runs before a tactic was chosen");
  if (const cublasStatus_t status = matmul(tactic_.algo, tactic_.workspace, buffers, workspace, stream);
      status != CUBLAS_STATUS_SUCCESS) {
    check(status, cat("running FP8 GEMM ", key_, " on cuBLASLt"));
  }
}

}  // namespace kiln::cuda
