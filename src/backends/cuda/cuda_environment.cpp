// What the cuda backend runs on: the GPU, the driver, and the CUDA runtime, cuDNN and cuBLASLt it was
// linked with. Library versions are read from the libraries loaded, not the headers compiled against.
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <fstream>
#include <iomanip>
#include <sstream>

#include "backends/cuda/cuda_backend.h"
#include "core/error.h"

namespace kiln {
namespace {

// CUDA encodes versions as 1000 * major + 10 * minor ("13.0").
std::string cuda_version(int encoded) { return cat(encoded / 1000, ".", (encoded % 1000) / 10); }

// cuDNN 9 and later: 10000 * major + 100 * minor + patch; cuDNN 8: 1000 * major + 100 * minor + patch.
std::string cudnn_version(std::size_t encoded) {
  const std::size_t major_unit = encoded >= 90000 ? 10000 : 1000;
  return cat(encoded / major_unit, ".", (encoded % major_unit) / 100, ".", encoded % 100);
}

// cuBLAS(Lt): 10000 * major + 100 * minor + patch.
std::string cublas_version(std::size_t encoded) {
  return cat(encoded / 10000, ".", (encoded % 10000) / 100, ".", encoded % 100);
}

// A dotted version such as "580.159.04".
bool is_dotted_version(const std::string& word) {
  bool dot = false, digit = false;
  for (const char c : word) {
    if (c == '.') {
      if (!digit) return false;
      dot = true;
      digit = false;
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else {
      return false;
    }
  }
  return dot && digit;
}

// The kernel module's version ("580.159.04"); empty where the file is absent (no NVIDIA driver). The
// first line reads "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." or, for the open
// module, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  ...": the version is
// the first dotted number after "Module".
std::string kernel_driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return "";
  std::istringstream words(line);
  bool after_module = false;
  for (std::string word; words >> word;) {
    if (after_module && is_dotted_version(word)) return word;
    after_module = after_module || word == "Module";
  }
  return "";
}

std::string driver_fact() {
  int driver = 0;
  const bool known = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  const std::string module = kernel_driver_version();
  if (!known) return module.empty() ? "none (no NVIDIA driver loaded)" : module;
  const std::string api = cat("CUDA ", cuda_version(driver), " driver API");
  return module.empty() ? api : cat(module, " (", api, ")");
}

// "NVIDIA H200 (sm_90, 139.8 GiB, 132 SMs)", or why there is none.
std::string gpu_fact() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) return cat("none (no CUDA device: ", cudaGetErrorString(status), ")");
  if (devices == 0) return "none (no CUDA device: the driver reports none)";
  int device = 0;
  cudaDeviceProp properties{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&properties, device) != cudaSuccess)
    return "unknown (the device's properties could not be read)";
  std::ostringstream text;
  text << properties.name << " (sm_" << properties.major << properties.minor << ", " << std::fixed
       << std::setprecision(1) << static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0)
       << " GiB, " << properties.multiProcessorCount << " SMs";
  if (devices > 1) text << "; device " << device << " of " << devices;
  text << ")";
  return text.str();
}

}  // namespace

std::vector<BackendFact> CudaBackend::environment() const {
  int runtime = 0;
  const std::string runtime_text =
      cudaRuntimeGetVersion(&runtime) == cudaSuccess ? cuda_version(runtime) : std::string("unknown");
  return {{"gpu", "GPU", gpu_fact()},
          {"gpu_driver", "GPU driver", driver_fact()},
          {"cuda_runtime", "CUDA runtime", runtime_text},
          {"cudnn", "cuDNN", cudnn_version(cudnnGetVersion())},
          {"cublaslt", "cuBLASLt", cublas_version(cublasLtGetVersion())}};
}

}  // namespace kiln
