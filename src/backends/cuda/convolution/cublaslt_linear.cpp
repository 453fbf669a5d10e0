#include "backends/cuda/convolution/cublaslt_linear.h"

#include <algorithm>
#include <cstdint>

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/cuda_util.h"
#include "backends/cuda/kernels/elementwise_kernels.h"

namespace kiln::cuda {
namespace {

// The workspace the heuristics may plan for (heuristic_preference(), cublaslt_linear.h).
constexpr std::uint64_t kHeuristicWorkspace = std::uint64_t{32} << 20;

cudaDataType_t data_type(Elem e) { return e == Elem::kF32 ? CUDA_R_32F : CUDA_R_16F; }

// `value` must have the attribute's documented type: cuBLASLt checks the size.
template <typename T>
void set(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute, const T& value) {
  check(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)),
        "setting a cuBLASLt matmul attribute");
}

cublasLtMatrixLayout_t column_major(Elem e, int rows, int cols, int ld) {
  cublasLtMatrixLayout_t layout = nullptr;
  check(cublasLtMatrixLayoutCreate(&layout, data_type(e), static_cast<std::uint64_t>(rows),
                                   static_cast<std::uint64_t>(cols), ld),
        "creating a cuBLASLt matrix layout");
  return layout;
}

}  // namespace

CublasLtPreference heuristic_preference() {
  cublasLtMatmulPreference_t preference = nullptr;
  check(cublasLtMatmulPreferenceCreate(&preference), "creating a cuBLASLt preference");
  CublasLtPreference owner(preference);
  check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &kHeuristicWorkspace, sizeof(kHeuristicWorkspace)),
        "setting the cuBLASLt workspace preference");
  return owner;
}

CublasLtLinear::CublasLtLinear(cublasLtHandle_t handle, Elem elem, int rows, int in, int out, Act act)
    : handle_(handle), elem_(elem), rows_(rows), out_(out), act_(act) {
  require(rows > 0 && in > 0 && out > 0, "cuda backend: linear layer ", rows, "x", in, " -> ", out,
          ": every extent must be positive");
  // cuBLASLt's epilogues add the bias and apply ReLU; SiLU and sigmoid are left to add_bias_act.
  fused_ = act == Act::kNone || act == Act::kRelu;
  ConvGeometry rows_in_out;
  rows_in_out.n = rows;
  rows_in_out.c = in;
  rows_in_out.k = out;
  key_ = tactic_key({.runner = kApiCublasLt,
                     .version = std::to_string(cublasLtGetVersion()),
                     .precision = elem_name(elem),
                     .geometry = rows_in_out,
                     .act = act});

  cublasLtMatmulDesc_t desc = nullptr;
  // f32 accumulation and scaling for both precisions; CUBLAS_COMPUTE_32F never rounds inputs to TF32.
  check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "creating a cuBLASLt matmul descriptor");
  matmul_desc_.reset(desc);
  set(desc, CUBLASLT_MATMUL_DESC_TRANSA, static_cast<std::int32_t>(CUBLAS_OP_T));
  set(desc, CUBLASLT_MATMUL_DESC_TRANSB, static_cast<std::int32_t>(CUBLAS_OP_N));
  set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
      static_cast<std::uint32_t>(act == Act::kRelu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS));
  set(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(data_type(elem)));

  // Column-major views of the row-major tensors: W [out, in] is A = [in x out] (used transposed),
  // x [rows, in] is B = [in x rows], y [rows, out] is C = D = [out x rows].
  weight_layout_.reset(column_major(elem, in, out, in));
  x_layout_.reset(column_major(elem, in, rows, in));
  y_layout_.reset(column_major(elem, out, rows, out));

  preference_ = heuristic_preference();
}

CublasLtLinear::~CublasLtLinear() = default;  // the descriptors' owners destroy them

std::vector<cublasLtMatmulHeuristicResult_t> ranked_algorithms(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
    cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t preference) {
  const void* stand_in = nullptr;
  if (cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &stand_in, sizeof(stand_in)) !=
      CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(kMatmulCandidates);
  int returned = 0;
  if (cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, d, preference, kMatmulCandidates, results.data(),
                                     &returned) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  results.resize(static_cast<std::size_t>(std::clamp(returned, 0, kMatmulCandidates)));
  return results;
}

std::optional<MatmulTactic> stored_matmul_tactic(const std::vector<cublasLtMatmulHeuristicResult_t>& results,
                                                 const TacticRecord& stored) {
  if (stored.algorithm < 0) return std::nullopt;
  const auto index = static_cast<std::size_t>(stored.algorithm);
  if (index >= results.size() || results[index].state != CUBLAS_STATUS_SUCCESS ||
      results[index].workspaceSize != stored.workspace) {
    return std::nullopt;
  }
  return MatmulTactic{stored.fused, stored.algorithm, stored.workspace, stored.milliseconds,
                      results[index].algo};
}

std::vector<cublasLtMatmulHeuristicResult_t> CublasLtLinear::heuristic_results() {
  return ranked_algorithms(handle_, matmul_desc_.get(), weight_layout_.get(), x_layout_.get(),
                           y_layout_.get(), y_layout_.get(), preference_.get());
}

cublasStatus_t CublasLtLinear::matmul(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes,
                                      const LinearBuffers& b, void* workspace, cudaStream_t stream) {
  // The bias pointer lives in the descriptor, so it is set on every call: buffers may change.
  const void* bias = b.bias;
  const cublasStatus_t status = cublasLtMatmulDescSetAttribute(
      matmul_desc_.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  // beta = 0: C is not read; it names y only because cuBLASLt wants a valid matrix there.
  const float one = 1.0f, zero = 0.0f;
  return cublasLtMatmul(handle_, matmul_desc_.get(), &one, b.weight, weight_layout_.get(), b.x,
                        x_layout_.get(), &zero, b.y, y_layout_.get(), b.y, y_layout_.get(), &algo, workspace,
                        workspace_bytes, stream);
}

cudaError_t CublasLtLinear::activation(const LinearBuffers& b, cudaStream_t stream) const {
  if (fused_) return cudaSuccess;
  return add_bias_act(b.y, nullptr, nullptr, b.y, elem_, rows_, out_, act_, stream);
}

bool CublasLtLinear::launch(const cublasLtMatmulAlgo_t& algo, std::size_t workspace_bytes,
                            const LinearBuffers& b, void* workspace, cudaStream_t stream) {
  return matmul(algo, workspace_bytes, b, workspace, stream) == CUBLAS_STATUS_SUCCESS &&
         activation(b, stream) == cudaSuccess;
}

void CublasLtLinear::offer_candidates(TacticRace<Tactic>& race, const LinearBuffers& buffers, void* workspace,
                                      std::size_t workspace_limit) {
  const std::vector<cublasLtMatmulHeuristicResult_t> results = heuristic_results();
  for (std::size_t index = 0; index < results.size(); ++index) {
    const cublasLtMatmulHeuristicResult_t& result = results[index];
    if (result.state != CUBLAS_STATUS_SUCCESS || result.workspaceSize > workspace_limit) continue;
    const Tactic tactic{fused_, static_cast<int>(index), result.workspaceSize, 0, result.algo};
    const auto run = [&](cudaStream_t s) {
      return launch(result.algo, result.workspaceSize, buffers, workspace, s);
    };
    if (!race.offer(tactic, run)) return;
  }
}

void CublasLtLinear::use(const Tactic& chosen) {
  tactic_ = chosen;
  has_algo_ = true;
}

bool CublasLtLinear::restore(const TacticRecord& stored) {
  if (stored.fused != fused_) return false;
  const std::optional<MatmulTactic> tactic = stored_matmul_tactic(heuristic_results(), stored);
  if (tactic) use(*tactic);
  return tactic.has_value();
}

void CublasLtLinear::enqueue(const LinearBuffers& buffers, void* workspace, cudaStream_t stream) {
  require(has_algo_, "cuda backend: linear layer ", key_, " runs before a tactic was chosen");
  if (const cublasStatus_t status = matmul(tactic_.algo, tactic_.workspace, buffers, workspace, stream);
      status != CUBLAS_STATUS_SUCCESS) {
    check(status, cat("running linear layer ", key_, " on cuBLASLt"));
  }
  if (const cudaError_t status = activation(buffers, stream); status != cudaSuccess) {
    check(status, cat("applying the activation of linear layer ", key_));
  }
}

}  // namespace kiln::cuda
