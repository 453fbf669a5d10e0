// Times kiln's Hopper convolution kernel (src/backends/cuda/hopper) on the layers of ResNet-50 and
// ResNeSt-50d (1x1 stride 1, ResNet-50's 3x3 at strides 1 and 2 and its strided 1x1 downsamples,
// ResNeSt-50d's grouped 3x3 radix convolutions) at batch
// 1, 32 and 256, in fp16, FP8 (E4M3) and int8, against cuBLASLt's fp16 and FP8 GEMMs (1x1 stride-1 layers
// only) and cuDNN's fastest fp16 convolution of the same shape, in one run, and checks every kiln result
// against an f32 reference computed from the same operands. One row per layer and batch:
//   microseconds per launch (median of CUDA-graph replays), the share of the dense tensor-core peak
//   (datasheet: 989 TFLOP/s fp16, 1979 FP8 and int8) and of DRAM bandwidth (each operand read once and the output
//   written once, over the card's datasheet bandwidth), and ||y - ref|| / ||ref|| for kiln's kernels.
//
//   hopper_conv_bench [--batches 1,32,256] [--layer C,K,HW] [--tile N] [--operand f16|e4m3|int8]
//                     [--epilogue NAME] [--check-only] [--json FILE]
//
// --layer keeps the layers of C input channels, K output channels and HW x HW pixels, --tile one of kiln's
// tiles (its tile_number()), --operand one of kiln's kernels (the others are not run), all for a profiler.
// --epilogue gives kiln's kernel the epilogue of a place in a plan (cuDNN and cuBLASLt keep theirs):
//   relu            bias, ReLU, fp16 output (the default)
//   codes           bias, ReLU, codes only (a layer read only by FP8 or int8 layers: E4M3 codes, int8
//                   ones for the int8 kernel)
//   residual        bias, fp16 residual, ReLU, fp16 output (a bottleneck's last layer in an fp16 plan)
//   residual-codes  bias, residual of E4M3 codes, ReLU, codes only (the same with --quantize-residuals;
//                   int8 plans keep residuals in fp16, so the int8 kernel has no such epilogue)
// A checked run writes the fp16 output beside the codes and compares it with the reference, and each code
// with the quantization of that fp16 value (exactly); the bandwidth share counts the bytes the timed
// epilogue moves.
//
// --check-only runs each of kiln's tiles once against the reference (at batches 1 and 32 unless given)
// and times nothing (also for compute-sanitizer); it exits 1 when a tile misses. The timed run checks
// nothing. cuDNN and cuBLASLt run without bias and ReLU; kiln's kernel with both.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/kernels/hopper/gemm_conv_kernels.h"

namespace {

using kiln::cuda::hopper::GemmConvEpilogue;
using kiln::cuda::hopper::GemmConvShape;
using kiln::cuda::hopper::GemmConvTile;
using kiln::cuda::hopper::GemmConvWindow;
using kiln::cuda::hopper::Operand;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "hopper_conv_bench: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "hopper_conv_bench: %s: cuBLASLt status %d\n", what, static_cast<int>(s));
    std::exit(1);
  }
}
void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "hopper_conv_bench: %s: %s\n", what, cudnnGetErrorString(s));
    std::exit(1);
  }
}

struct Layer {
  const char* model;
  int c, k, hw;  // input channels, output channels (of all groups), output height = width
  int kernel = 1, stride = 1;  // square windows, padded to keep hw / stride
  int groups = 1;
};

// The distinct convolutions of timm's resnet50 and resnest50d (input channels, output channels, output
// size, window, groups): every 1x1 stride-1 layer of both, ResNet-50's 3x3 layers and its strided 1x1
// downsamples, ResNeSt-50d's radix convolutions (two groups; a stage's first runs at the previous stage's
// size, its average pool striding after it).
const Layer kLayers[] = {
    {"resnet50", 64, 64, 56},     {"resnet50", 64, 256, 56},   {"resnet50", 256, 64, 56},
    {"resnet50", 256, 128, 56},   {"resnet50", 128, 512, 28},  {"resnet50", 512, 128, 28},
    {"resnet50", 512, 256, 28},   {"resnet50", 256, 1024, 14}, {"resnet50", 1024, 256, 14},
    {"resnet50", 1024, 512, 14},  {"resnet50", 512, 2048, 7},  {"resnet50", 2048, 512, 7},
    {"resnest50d", 64, 128, 56},  {"resnest50d", 128, 64, 56}, {"resnest50d", 256, 256, 56},
    {"resnest50d", 256, 512, 28}, {"resnest50d", 1024, 1024, 14}, {"resnest50d", 2048, 2048, 7},
    {"resnet50", 64, 64, 56, 3, 1},  {"resnet50", 128, 128, 28, 3, 1}, {"resnet50", 128, 128, 28, 3, 2},
    {"resnet50", 256, 256, 14, 3, 1}, {"resnet50", 256, 256, 14, 3, 2}, {"resnet50", 512, 512, 7, 3, 1},
    {"resnet50", 512, 512, 7, 3, 2}, {"resnet50", 256, 512, 28, 1, 2}, {"resnet50", 512, 1024, 14, 1, 2},
    {"resnet50", 1024, 2048, 7, 1, 2},
    {"resnest50d", 64, 128, 56, 3, 1, 2},   {"resnest50d", 128, 256, 56, 3, 1, 2},
    {"resnest50d", 128, 256, 28, 3, 1, 2},  {"resnest50d", 256, 512, 28, 3, 1, 2},
    {"resnest50d", 256, 512, 14, 3, 1, 2},  {"resnest50d", 512, 1024, 14, 3, 1, 2},
    {"resnest50d", 512, 1024, 7, 3, 1, 2},
};

// Which epilogue kiln's kernel runs (--epilogue).
enum class Epilogue { kRelu, kCodes, kResidual, kResidualCodes };

bool writes_codes_only(Epilogue e) { return e == Epilogue::kCodes || e == Epilogue::kResidualCodes; }
bool has_residual(Epilogue e) { return e == Epilogue::kResidual || e == Epilogue::kResidualCodes; }

// Bytes an element of the output moves: the residual read and the output written.
double epilogue_bytes(Epilogue e) {
  switch (e) {
    case Epilogue::kRelu: return 2;
    case Epilogue::kCodes: return 1;
    case Epilogue::kResidual: return 4;
    case Epilogue::kResidualCodes: return 2;
  }
  return 2;
}

std::optional<Epilogue> parse_epilogue(const std::string& name) {
  if (name == "relu") return Epilogue::kRelu;
  if (name == "codes") return Epilogue::kCodes;
  if (name == "residual") return Epilogue::kResidual;
  if (name == "residual-codes") return Epilogue::kResidualCodes;
  return std::nullopt;
}

// The layer's window at `batch` (none for 1x1 stride-1 layers, which read x as a matrix).
GemmConvWindow window_of(const Layer& l, int batch) {
  if (l.kernel == 1 && l.stride == 1) return {};
  const int in = l.hw * l.stride, pad = l.kernel / 2;
  return {batch, in, in, l.kernel, l.kernel, l.stride, l.stride, pad, pad, l.hw, l.hw};
}

struct Card {
  std::string name;
  double bandwidth;  // bytes per second, datasheet
};

Card card() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "reading the device");
  const std::string name = p.name;
  return {name, name.find("H200") != std::string::npos ? 4.8e12 : 3.35e12};
}

// Median microseconds per launch of `launch`, captured 20 times into a graph and replayed.
template <class F>
double time_us(F launch, cudaStream_t stream) {
  launch(stream);
  check(cudaStreamSynchronize(stream), "warm-up");
  constexpr int kPerGraph = 20;
  cudaGraph_t graph;
  check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
  for (int i = 0; i < kPerGraph; ++i) launch(stream);
  check(cudaStreamEndCapture(stream, &graph), "capture");
  cudaGraphExec_t exec;
  check(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  check(cudaGraphLaunch(exec, stream), "replay");
  std::vector<double> samples;
  for (int r = 0; r < 15; ++r) {
    check(cudaEventRecord(start, stream), "event");
    check(cudaGraphLaunch(exec, stream), "replay");
    check(cudaEventRecord(stop, stream), "event");
    check(cudaEventSynchronize(stop), "event");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "event");
    samples.push_back(ms * 1000.0 / kPerGraph);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

// f32 reference: y[m, n] = sum over taps t and channels i of a[pixel(m, t), g c + i] * w[n, t, i] * scale[n]
// + bias[n] (+ residual[m, n]), relu; a pointwise layer's pixel(m, t) is m. Output channel n reads group
// g = n / (n_all / groups); x has groups x c channels a pixel, w tap_c a tap (c, then zeros).
__global__ void reference_kernel(const float* a, const float* w, const float* scale, const float* bias,
                                 const float* residual, float* y, int n, int c, GemmConvWindow v, int groups,
                                 int tap_c) {
  const int col = blockIdx.y * blockDim.x + threadIdx.x;
  const int row = blockIdx.x;  // x: rows may number more than 65535
  if (col >= n) return;
  const int taps = v.kernel_h * v.kernel_w;
  float s = 0;
  for (int t = 0; t < taps; ++t) {
    std::int64_t pixel = row;
    if (v.batch > 0) {
      const int image = row / (v.out_height * v.out_width), oh = row / v.out_width % v.out_height;
      const int ih = oh * v.stride_h - v.pad_h + t / v.kernel_w, iw = row % v.out_width * v.stride_w - v.pad_w + t % v.kernel_w;
      if (ih < 0 || ih >= v.height || iw < 0 || iw >= v.width) continue;
      pixel = (static_cast<std::int64_t>(image) * v.height + ih) * v.width + iw;
    }
    const float* x = a + pixel * c * groups + col / (n / groups) * c;
    for (int i = 0; i < c; ++i) s += x[i] * w[(static_cast<std::int64_t>(col) * taps + t) * tap_c + i];
  }
  const std::int64_t at = static_cast<std::int64_t>(row) * n + col;
  const float v_out = s * scale[col] + bias[col] + (residual != nullptr ? residual[at] : 0.0f);
  y[at] = v_out > 0 ? v_out : 0;
}

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p = nullptr;
  check(cudaMalloc(&p, host.size() * sizeof(T) + 16), "cudaMalloc");
  check(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return p;
}

// The operands of one layer at one batch, in fp16, as E4M3 codes and as int8 codes, with their f32 values:
// x is [in_m, groups x c], w is [n, k] with k = taps x tap_c (a group's c channels a tap, zeros up to
// tap_c: grouped_weight_tap_channels()), y is [m, n].
struct Operands {
  int m, n, k, c, in_m;
  GemmConvWindow window;
  int groups = 1, tap_c = 0, tap_c8 = 0;  // tap_c of fp16 weights, tap_c8 of 8-bit ones
  __half *a16, *w16, *y16;
  std::uint8_t *a8, *w8;
  std::int8_t *a_i8, *w_i8;
  float *a32, *w32, *ref, *scale16, *scale8, *scale_i8, *bias;
  float a_scale, w_scale, a_scale_i8, w_scale_i8;
  // The epilogue's: a residual [m, n] in fp16 and as E4M3 codes of scale r_scale, each decoded as the
  // kernel reads it (r32: the fp16 values, r32_codes: half(code x r_scale)), and the output's codes.
  __half* r16 = nullptr;
  std::uint8_t *r8 = nullptr, *y8 = nullptr;
  float *r32 = nullptr, *r32_codes = nullptr;
  float r_scale = 1.0f, y_scale = 1.0f, y_scale_i8 = 1.0f;  // y's codes: E4M3's, int8's
};

// The residual operands of `o` for epilogues that read one: unit-variance values, codes of max / 448.
void make_residual(Operands& o, std::mt19937& rng) {
  const std::size_t count = static_cast<std::size_t>(o.m) * o.n;
  std::uniform_real_distribution<float> normal(-1.7f, 1.7f);
  std::vector<__half> r16(count);
  std::vector<std::uint8_t> r8(count);
  std::vector<float> r32(count), r32_codes(count);
  o.r_scale = 1.7f / 448.0f;
  for (std::size_t i = 0; i < count; ++i) {
    const float v = normal(rng);
    r16[i] = __float2half_rn(v);
    r32[i] = __half2float(r16[i]);
    r8[i] = __nv_cvt_float_to_fp8(v / o.r_scale, __NV_SATFINITE, __NV_E4M3);
    __nv_fp8_e4m3 code;
    code.__x = r8[i];
    r32_codes[i] = __half2float(__float2half_rn(static_cast<float>(code) * o.r_scale));
  }
  o.r16 = device_copy(r16);
  o.r8 = device_copy(r8);
  o.r32 = device_copy(r32);
  o.r32_codes = device_copy(r32_codes);
}

// [n, taps, c] weights with each tap padded to tap_c channels of zeros (a code of 0 is 0 in every type).
template <class T>
std::vector<T> padded_taps(const std::vector<T>& w, int rows, int c, int tap_c) {
  std::vector<T> out(static_cast<std::size_t>(rows) * tap_c, T{});
  for (int r = 0; r < rows; ++r) std::copy_n(w.begin() + static_cast<std::ptrdiff_t>(r) * c, c, out.begin() + static_cast<std::ptrdiff_t>(r) * tap_c);
  return out;
}

Operands make_operands(const Layer& layer, int batch, std::mt19937& rng) {
  using kiln::cuda::hopper::grouped_weight_tap_channels;
  const GemmConvWindow v = window_of(layer, batch);
  const int c = layer.c / layer.groups, taps = layer.kernel * layer.kernel;
  const int m = batch * layer.hw * layer.hw, n = layer.k, k = taps * c;
  const int in_m = v.batch > 0 ? batch * v.height * v.width : m;
  Operands o{m, n, k, c, in_m, v, layer.groups, grouped_weight_tap_channels(c, layer.groups, 2),
             grouped_weight_tap_channels(c, layer.groups, 1)};
  std::uniform_real_distribution<float> normal(-1.7f, 1.7f);  // unit variance, cheap to draw
  std::vector<float> a(static_cast<std::size_t>(in_m) * layer.c), w(static_cast<std::size_t>(n) * k), bias(n);
  for (float& v : a) v = std::fabs(normal(rng));  // post-ReLU activations
  for (float& v : w) v = normal(rng) / std::sqrt(static_cast<float>(k));
  for (float& v : bias) v = 0.1f * normal(rng);
  // E4M3 codes of both operands with per-tensor scales (max / 448), decoded back for the reference.
  const auto amax = [](const std::vector<float>& v) {
    float x = 0;
    for (float e : v) x = std::max(x, std::fabs(e));
    return x;
  };
  o.a_scale = amax(a) / 448.0f;
  o.w_scale = amax(w) / 448.0f;
  std::vector<std::uint8_t> a8(a.size()), w8(w.size());
  std::vector<__half> a16(a.size()), w16(w.size());
  std::vector<float> a32(a.size()), w32(w.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    a8[i] = __nv_cvt_float_to_fp8(a[i] / o.a_scale, __NV_SATFINITE, __NV_E4M3);
    a16[i] = __float2half_rn(a[i]);
  }
  for (std::size_t i = 0; i < w.size(); ++i) {
    w8[i] = __nv_cvt_float_to_fp8(w[i] / o.w_scale, __NV_SATFINITE, __NV_E4M3);
    w16[i] = __float2half_rn(w[i]);
  }
  // int8 codes with per-tensor scales max / 127, rounded to nearest even.
  o.a_scale_i8 = amax(a) / 127.0f;
  o.w_scale_i8 = amax(w) / 127.0f;
  const auto int8_codes = [](const std::vector<float>& v, float scale) {
    std::vector<std::int8_t> codes(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) codes[i] = static_cast<std::int8_t>(std::nearbyint(v[i] / scale));
    return codes;
  };
  const int tap_rows = n * taps;
  o.a_i8 = device_copy(int8_codes(a, o.a_scale_i8));
  o.w_i8 = device_copy(padded_taps(int8_codes(w, o.w_scale_i8), tap_rows, c, o.tap_c8));
  o.a8 = device_copy(a8);
  o.w8 = device_copy(padded_taps(w8, tap_rows, c, o.tap_c8));
  o.a16 = device_copy(a16);
  o.w16 = device_copy(padded_taps(w16, tap_rows, c, o.tap_c));
  for (std::size_t i = 0; i < a.size(); ++i) a32[i] = __half2float(a16[i]);
  for (std::size_t i = 0; i < w.size(); ++i) w32[i] = __half2float(w16[i]);
  o.a32 = device_copy(a32);
  o.w32 = device_copy(padded_taps(w32, tap_rows, c, o.tap_c));
  o.bias = device_copy(bias);
  o.scale16 = device_copy(std::vector<float>(n, 1.0f));
  o.scale8 = device_copy(std::vector<float>(n, o.a_scale * o.w_scale));
  o.scale_i8 = device_copy(std::vector<float>(n, o.a_scale_i8 * o.w_scale_i8));
  check(cudaMalloc(&o.y16, static_cast<std::size_t>(m) * n * 2), "cudaMalloc");
  check(cudaMalloc(&o.y8, static_cast<std::size_t>(m) * n), "cudaMalloc");
  check(cudaMalloc(&o.ref, static_cast<std::size_t>(m) * n * 4), "cudaMalloc");
  o.y_scale = 4.0f / 448.0f;
  o.y_scale_i8 = 4.0f / 127.0f;
  return o;
}

void free_operands(Operands& o) {
  for (void* p : {static_cast<void*>(o.a16), static_cast<void*>(o.w16), static_cast<void*>(o.y16),
                  static_cast<void*>(o.a8), static_cast<void*>(o.w8), static_cast<void*>(o.a32),
                  static_cast<void*>(o.w32), static_cast<void*>(o.ref), static_cast<void*>(o.scale16),
                  static_cast<void*>(o.scale8), static_cast<void*>(o.bias), static_cast<void*>(o.y8),
                  static_cast<void*>(o.r16), static_cast<void*>(o.r8), static_cast<void*>(o.r32),
                  static_cast<void*>(o.r32_codes), static_cast<void*>(o.a_i8), static_cast<void*>(o.w_i8),
                  static_cast<void*>(o.scale_i8)})
    cudaFree(p);
}

// Decodes E4M3 or int8 codes to f32 (the 8-bit references' operands).
__global__ void decode_kernel(const std::uint8_t* codes, bool int8, float* out, std::int64_t count) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  if (int8) {
    out[i] = static_cast<float>(static_cast<std::int8_t>(codes[i]));
    return;
  }
  __nv_fp8_e4m3 v;
  v.__x = codes[i];
  out[i] = static_cast<float>(v);
}

const char* operand_name(Operand operand) {
  switch (operand) {
    case Operand::kF16: return "f16";
    case Operand::kE4m3: return "e4m3";
    case Operand::kS8: return "int8";
  }
  return "?";
}

const float* epilogue_scale(const Operands& o, Operand operand) {
  return operand == Operand::kF16 ? o.scale16 : operand == Operand::kE4m3 ? o.scale8 : o.scale_i8;
}

void reference(const Operands& o, Operand operand, Epilogue epilogue, cudaStream_t stream) {
  const float* a = o.a32;
  const float* w = o.w32;
  float* a_tmp = nullptr;
  float* w_tmp = nullptr;
  const int tap_c = operand == Operand::kF16 ? o.tap_c : o.tap_c8;
  if (operand != Operand::kF16) {
    const bool int8 = operand == Operand::kS8;
    const std::int64_t na = static_cast<std::int64_t>(o.in_m) * o.c * o.groups,
                       nw = static_cast<std::int64_t>(o.n) * o.k / o.c * tap_c;
    check(cudaMalloc(&a_tmp, na * 4), "cudaMalloc");
    check(cudaMalloc(&w_tmp, nw * 4), "cudaMalloc");
    const auto* a_codes = int8 ? reinterpret_cast<const std::uint8_t*>(o.a_i8) : o.a8;
    const auto* w_codes = int8 ? reinterpret_cast<const std::uint8_t*>(o.w_i8) : o.w8;
    decode_kernel<<<(na + 255) / 256, 256, 0, stream>>>(a_codes, int8, a_tmp, na);
    decode_kernel<<<(nw + 255) / 256, 256, 0, stream>>>(w_codes, int8, w_tmp, nw);
    a = a_tmp;
    w = w_tmp;
  }
  const float* residual = epilogue == Epilogue::kResidual        ? o.r32
                          : epilogue == Epilogue::kResidualCodes ? o.r32_codes
                                                                 : nullptr;
  reference_kernel<<<dim3(o.m, (o.n + 127) / 128), 128, 0, stream>>>(a, w, epilogue_scale(o, operand), o.bias,
                                                                      residual, o.ref, o.n, o.c, o.window, o.groups,
                                                                      tap_c);
  check(cudaGetLastError(), "reference");
  check(cudaStreamSynchronize(stream), "reference");
  cudaFree(a_tmp);
  cudaFree(w_tmp);
}

// ||y - ref|| / ||ref|| of the fp16 output against the f32 reference; NaN or an unwritten (poisoned)
// element makes it infinite.
double relative_error(const Operands& o) {
  const std::size_t count = static_cast<std::size_t>(o.m) * o.n;
  std::vector<__half> y(count);
  std::vector<float> ref(count);
  check(cudaMemcpy(y.data(), o.y16, count * 2, cudaMemcpyDeviceToHost), "download");
  check(cudaMemcpy(ref.data(), o.ref, count * 4, cudaMemcpyDeviceToHost), "download");
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double v = __half2float(y[i]);
    if (!std::isfinite(v)) return INFINITY;
    diff += (v - ref[i]) * (v - ref[i]);
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

// How many codes differ from the quantization of the fp16 output they were written beside: E4M3 by a true
// division (the kernel's e4m3_codes2), int8 by the reciprocal, rounded to nearest even and saturated
// (quantize_to_int8). Exact: any difference is a defect.
std::size_t code_mismatches(const Operands& o, Operand operand) {
  const std::size_t count = static_cast<std::size_t>(o.m) * o.n;
  std::vector<__half> y(count);
  std::vector<std::uint8_t> codes(count);
  check(cudaMemcpy(y.data(), o.y16, count * 2, cudaMemcpyDeviceToHost), "download");
  check(cudaMemcpy(codes.data(), o.y8, count, cudaMemcpyDeviceToHost), "download");
  const float inverse = 1.0f / o.y_scale_i8;
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const float v = __half2float(y[i]);
    std::uint8_t expected = 0;
    if (operand == Operand::kS8) {
      const float q = std::nearbyint(v * inverse);
      expected = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::isnan(q) ? 0.0f : std::clamp(q, -128.0f, 127.0f)));
    } else {
      expected = __nv_cvt_float_to_fp8(v / o.y_scale, __NV_SATFINITE, __NV_E4M3);
    }
    mismatches += codes[i] != expected;
  }
  return mismatches;
}

struct Result {
  double us = 0;
  GemmConvTile tile;
  double error = 0;
};

// The largest ||y - ref|| / ||ref|| a tile may show: one rounding of the output to fp16 (2^-11 relative at
// most) over f32 accumulation of exact products. E4M3 gets twice that: Hopper's FP8 matrix steps add their
// products with fewer bits than f32, so the error grows with the channel count (7.7e-4 at 2048 channels on
// an H100, against 2.1e-4 for fp16 at any count). int8 sums are exact integers, converted to f32 once.
constexpr double kTolerance = 0x1p-10;
constexpr double kTolerance8 = 0x1p-9;

double tolerance(Operand operand) { return operand == Operand::kE4m3 ? kTolerance8 : kTolerance; }

// kiln's kernel, every tile: checked against the reference (output poisoned first) or timed, the fastest
// kept. The error is the worst tile's: every tile must be right.
// kiln's epilogue `kind` on `o`'s buffers; a checked run also writes the fp16 output it compares.
GemmConvEpilogue kiln_epilogue(const Operands& o, Operand operand, Epilogue kind, bool timed) {
  GemmConvEpilogue epilogue;
  epilogue.scale = epilogue_scale(o, operand);
  epilogue.bias = o.bias;
  epilogue.act = kiln::cuda::Act::kRelu;
  epilogue.y = writes_codes_only(kind) && timed ? nullptr : o.y16;
  if (writes_codes_only(kind)) epilogue.codes = {o.y8, operand == Operand::kS8 ? o.y_scale_i8 : o.y_scale};
  if (operand == Operand::kS8) epilogue.codes.grid = kiln::cuda::hopper::CodeGrid::kInt8;
  if (kind == Epilogue::kResidual) epilogue.residual = o.r16;
  if (kind == Epilogue::kResidualCodes) epilogue.residual_codes = {o.r8, o.r_scale};
  return epilogue;
}

// The operand buffers of `operand`: x's, then w's.
std::pair<const void*, const void*> operand_buffers(const Operands& o, Operand operand) {
  switch (operand) {
    case Operand::kF16: return {o.a16, o.w16};
    case Operand::kE4m3: return {o.a8, o.w8};
    case Operand::kS8: return {o.a_i8, o.w_i8};
  }
  return {nullptr, nullptr};
}

// Empty where the kernel has no such epilogue for `operand` (int8 with a residual of E4M3 codes).
std::optional<Result> run_kiln(const Operands& o, Operand operand, Epilogue kind, int only_tile, bool timed,
                               cudaStream_t stream) {
  const GemmConvEpilogue epilogue = kiln_epilogue(o, operand, kind, timed);
  if (!kiln::cuda::hopper::gemm_conv_epilogue_takes(operand, epilogue)) return std::nullopt;
  if (!timed) reference(o, operand, kind, stream);
  const GemmConvShape shape{o.m,     o.n,      o.c,
                            o.c * o.groups, o.n, has_residual(kind) ? o.n : 0,
                            o.window, o.groups, operand == Operand::kF16 ? o.tap_c : o.tap_c8};
  const std::pair<const void*, const void*> buffers = operand_buffers(o, operand);
  const void* a = buffers.first;
  const void* w = buffers.second;
  std::optional<Result> best;
  double worst_error = 0;
  for (const GemmConvTile& tile : kiln::cuda::hopper::kGemmConvTiles) {
    if (only_tile != 0 && kiln::cuda::hopper::tile_number(tile) != only_tile) continue;
    if (!kiln::cuda::hopper::gemm_conv_takes(shape, operand, tile, writes_codes_only(kind),
                                             kind == Epilogue::kResidualCodes)) {
      continue;
    }
    const auto launch = [&](cudaStream_t s) {
      check(kiln::cuda::hopper::gemm_conv(operand, a, w, shape, tile, epilogue, s), "kiln gemm_conv");
    };
    double us = 0;
    if (timed) {
      us = time_us(launch, stream);
    } else {
      check(cudaMemsetAsync(o.y16, 0xff, static_cast<std::size_t>(o.m) * o.n * 2, stream), "poison");
      launch(stream);
      check(cudaStreamSynchronize(stream), "kiln gemm_conv");
      double error = relative_error(o);
      if (!(error <= tolerance(operand)))
        std::printf("FAIL: %s tile %dx%dx%dx%d: relative error %.3g\n", operand_name(operand), tile.columns,
                    tile.consumers, tile.blocks, tile.k_bytes, error);
      if (writes_codes_only(kind)) {
        if (const std::size_t wrong = code_mismatches(o, operand); wrong > 0) {
          std::printf("FAIL: %s tile %dx%dx%dx%d: %zu codes differ from the quantized fp16 output\n",
                      operand_name(operand), tile.columns, tile.consumers, tile.blocks, tile.k_bytes, wrong);
          error = INFINITY;
        }
      }
      worst_error = std::max(worst_error, error);
    }
    if (!best || us < best->us) best = Result{us, tile, 0};
  }
  if (best) best->error = worst_error;
  return best;
}

// cuBLASLt's fastest of its heuristic's first algorithms for D[m, n] = A[m, k] W[n, k]^T (TN in its
// column-major terms), fp16 output, with a bias-ReLU epilogue where it has one.
double time_cublaslt(cublasLtHandle_t lt, const Operands& o, bool fp8, void* workspace, std::size_t ws_bytes,
                     cudaStream_t stream) {
  if (o.window.batch > 0) return NAN;  // a GEMM computes pointwise layers only
  const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16F;
  cublasLtMatmulDesc_t desc;
  check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "matmul desc");
  const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
  check(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt), "transb");
  cublasLtMatrixLayout_t la, lb, ld;
  check(cublasLtMatrixLayoutCreate(&la, in, o.k, o.n, o.k), "layout");
  check(cublasLtMatrixLayoutCreate(&lb, in, o.k, o.m, o.k), "layout");
  check(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16F, o.n, o.m, o.n), "layout");
  cublasLtMatmulPreference_t pref;
  check(cublasLtMatmulPreferenceCreate(&pref), "preference");
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                             sizeof ws_bytes), "preference");
  cublasLtMatmulHeuristicResult_t results[8];
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 8, results, &found) != CUBLAS_STATUS_SUCCESS)
    found = 0;  // no algorithm for this shape: the row shows inf
  const float alpha = fp8 ? o.a_scale * o.w_scale : 1.0f, beta = 0.0f;
  const void* a = fp8 ? static_cast<const void*>(o.w8) : o.w16;
  const void* b = fp8 ? static_cast<const void*>(o.a8) : o.a16;
  double best = INFINITY;
  for (int i = 0; i < found; ++i) {
    const auto launch = [&](cudaStream_t s) {
      cublasLtMatmul(lt, desc, &alpha, a, la, b, lb, &beta, o.y16, ld, o.y16, ld, &results[i].algo, workspace,
                     ws_bytes, s);
    };
    best = std::min(best, time_us(launch, stream));
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  return best;
}

// cuDNN's fastest fp16 convolution (NHWC, f32 accumulation, grouped where the layer is) by its own search,
// timed here; none where the fp16 weights' taps are padded (cuDNN reads them packed).
double time_cudnn(cudnnHandle_t dnn, const Operands& o, const Layer& l, int batch, void* workspace,
                  std::size_t ws_bytes, cudaStream_t stream) {
  if (o.tap_c != o.c) return NAN;
  const int pad = l.kernel / 2;
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  check(cudnnCreateTensorDescriptor(&x), "desc");
  check(cudnnCreateTensorDescriptor(&y), "desc");
  check(cudnnCreateFilterDescriptor(&w), "desc");
  check(cudnnCreateConvolutionDescriptor(&conv), "desc");
  check(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, batch, l.c, l.hw * l.stride,
                                   l.hw * l.stride), "x");
  check(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, batch, o.n, l.hw, l.hw), "y");
  check(cudnnSetFilter4dDescriptor(w, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, o.n, o.c, l.kernel, l.kernel), "w");
  check(cudnnSetConvolution2dDescriptor(conv, pad, pad, l.stride, l.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT), "conv");
  check(cudnnSetConvolutionGroupCount(conv, l.groups), "groups");
  check(cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH), "math");
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  check(cudnnFindConvolutionForwardAlgorithmEx(dnn, x, o.a16, w, o.w16, conv, y, o.y16, 8, &found, perf, workspace,
                                               ws_bytes), "find");
  double best = INFINITY;
  const float one = 1, zero = 0;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_bytes) continue;
    const auto launch = [&](cudaStream_t) {
      cudnnConvolutionForward(dnn, &one, x, o.a16, w, o.w16, conv, perf[i].algo, workspace, ws_bytes, &zero, y, o.y16);
    };
    best = std::min(best, time_us(launch, stream));
  }
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyConvolutionDescriptor(conv);
  return best;
}

// A time for the JSON rows: null where there is none (no GEMM for a window, no tile that ran).
std::string json_number(double us) {
  if (!std::isfinite(us)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", us);
  return text;
}

// One layer at one batch: the peers' times and kiln's result per operand type (empty where the kernel has
// no such epilogue or took no tile).
struct Row {
  double cudnn16 = 0, lt16 = 0, lt8 = 0;
  std::optional<Result> k16, k8, ki8;
};

std::optional<Operand> parse_operand(const std::string& name) {
  for (const Operand operand : {Operand::kF16, Operand::kE4m3, Operand::kS8}) {
    if (name == operand_name(operand)) return operand;
  }
  return std::nullopt;
}

// Whether a kernel that ran (or should have: every operand type but int8 with a residual of E4M3 codes,
// unless --operand picked another) missed its tolerance.
bool row_failed(const Row& row, Epilogue epilogue, std::optional<Operand> only) {
  const auto missed = [&](Operand operand, const std::optional<Result>& r) {
    if (only && *only != operand) return false;
    if (!r) return !(operand == Operand::kS8 && epilogue == Epilogue::kResidualCodes);
    return !(r->error <= tolerance(operand));
  };
  return missed(Operand::kF16, row.k16) || missed(Operand::kE4m3, row.k8) || missed(Operand::kS8, row.ki8);
}

double us_of(const std::optional<Result>& r) { return r ? r->us : INFINITY; }

std::string window_name(const Layer& layer) {
  char win[24];
  std::snprintf(win, sizeof win, layer.groups > 1 ? "%dx%d/%dg%d" : "%dx%d/%d", layer.kernel, layer.kernel,
                layer.stride, layer.groups);
  return win;
}

// A checked error, or "none" where the kernel has no such epilogue for the operand type.
std::string error_text(const std::optional<Result>& r) {
  if (!r) return "none";
  char text[32];
  std::snprintf(text, sizeof text, "%.2e", r->error);
  return text;
}

void print_checked(const Layer& layer, int batch, const Row& row) {
  std::printf("checked %-10s c %5d k %5d hw %3d %5s batch %3d: error f16 %s, e4m3 %s, int8 %s\n", layer.model,
              layer.c, layer.k, layer.hw, window_name(layer).c_str(), batch, error_text(row.k16).c_str(),
              error_text(row.k8).c_str(), error_text(row.ki8).c_str());
  std::fflush(stdout);
}

// The table's row: times, kiln's speed-up over cuDNN fp16, the FP8 kernel's share of the 8-bit peak and
// each kernel's share of DRAM bandwidth.
void print_row(const Layer& layer, int batch, const Operands& o, Epilogue epilogue, const Card& gpu, const Row& row) {
  const double flops = 2.0 * o.m * layer.k * o.k;
  const double bytes8 = static_cast<double>(o.in_m) * layer.c + static_cast<double>(layer.k) * o.k +
                        epilogue_bytes(epilogue) * o.m * layer.k;
  const double bytes16 = bytes8 + static_cast<double>(o.in_m) * layer.c + static_cast<double>(layer.k) * o.k;
  const double k16 = us_of(row.k16), k8 = us_of(row.k8), ki8 = us_of(row.ki8), dn = row.cudnn16;
  std::printf(
      "%-10s %5d %5d %4d %8s %5d | %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f | %6.2f %6.2f %6.2f %5.1f%% %5.1f%% %5.1f%%\n",
      layer.model, layer.c, layer.k, layer.hw, window_name(layer).c_str(), batch, dn, row.lt16, k16, row.lt8, k8, ki8,
      dn / k16, dn / k8, dn / ki8, 100.0 * flops / (k8 * 1e-6) / 1979e12, 100.0 * bytes16 / (k16 * 1e-6) / gpu.bandwidth,
      100.0 * bytes8 / (k8 * 1e-6) / gpu.bandwidth);
  std::fflush(stdout);
}

std::string json_tile(const std::optional<Result>& r) {
  if (!r) return "null";
  char text[64];
  std::snprintf(text, sizeof text, "[%d, %d, %d, %d]", r->tile.columns, r->tile.consumers, r->tile.blocks,
                r->tile.k_bytes);
  return text;
}

void write_json_row(std::FILE* json, bool first, const Layer& layer, int batch, const char* epilogue_name,
                    const Row& row) {
  std::fprintf(json,
               "%s{\"model\": \"%s\", \"c\": %d, \"k\": %d, \"hw\": %d, \"kernel\": %d, \"stride\": %d, "
               "\"groups\": %d, "
               "\"batch\": %d, \"epilogue\": \"%s\", \"cudnn_f16_us\": %s, \"cublaslt_f16_us\": %s, "
               "\"cublaslt_fp8_us\": %s, \"kiln_f16_us\": %s, \"kiln_fp8_us\": %s, \"kiln_int8_us\": %s, "
               "\"kiln_f16_tile\": %s, \"kiln_fp8_tile\": %s, \"kiln_int8_tile\": %s}",
               first ? "" : ",\n", layer.model, layer.c, layer.k, layer.hw, layer.kernel, layer.stride, layer.groups, batch,
               epilogue_name, json_number(row.cudnn16).c_str(), json_number(row.lt16).c_str(),
               json_number(row.lt8).c_str(), json_number(us_of(row.k16)).c_str(), json_number(us_of(row.k8)).c_str(),
               json_number(us_of(row.ki8)).c_str(), json_tile(row.k16).c_str(), json_tile(row.k8).c_str(),
               json_tile(row.ki8).c_str());
}

std::vector<int> parse_batches(const char* text) {
  std::vector<int> batches;
  for (const char* p = text; *p != '\0';) {
    char* end = nullptr;
    const long v = std::strtol(p, &end, 10);
    if (end == p || v <= 0) {
      std::fprintf(stderr, "hopper_conv_bench: --batches wants positive integers separated by commas, got '%s'\n", text);
      std::exit(2);
    }
    batches.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  return batches;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> batches = {1, 32, 256};
  const char* json_path = nullptr;
  bool timed = true;
  int only[3] = {0, 0, 0};
  int only_tile = 0;
  std::optional<Operand> only_operand;
  Epilogue epilogue = Epilogue::kRelu;
  const char* epilogue_name = "relu";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--batches" && i + 1 < argc) {
      batches = parse_batches(argv[++i]);
    } else if (arg == "--layer" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%d,%d,%d", &only[0], &only[1], &only[2]) != 3) {
        std::fprintf(stderr, "hopper_conv_bench: --layer wants C,K,HW, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (arg == "--tile" && i + 1 < argc) {
      only_tile = std::atoi(argv[++i]);
    } else if (arg == "--operand" && i + 1 < argc) {
      only_operand = parse_operand(argv[++i]);
      if (!only_operand) {
        std::fprintf(stderr, "hopper_conv_bench: --operand wants f16, e4m3 or int8, got '%s'\n", argv[i]);
        return 2;
      }
    } else if (arg == "--epilogue" && i + 1 < argc) {
      epilogue_name = argv[++i];
      const std::optional<Epilogue> parsed = parse_epilogue(epilogue_name);
      if (!parsed) {
        std::fprintf(stderr, "hopper_conv_bench: --epilogue wants relu, codes, residual or residual-codes, got '%s'\n",
                     epilogue_name);
        return 2;
      }
      epilogue = *parsed;
    } else if (arg == "--check-only") {
      timed = false;
    } else if (arg == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: hopper_conv_bench [--batches 1,32,256] [--layer C,K,HW] [--tile N] [--operand NAME] "
                   "[--epilogue NAME] "
                   "[--check-only] [--json FILE]\n");
      return 2;
    }
  }
  if (!kiln::cuda::hopper::hopper_gpu()) {
    std::fprintf(stderr, "hopper_conv_bench: needs a Hopper GPU (compute capability 9.0)\n");
    return 1;
  }
  const Card gpu = card();
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  cublasLtHandle_t lt;
  check(cublasLtCreate(&lt), "cuBLASLt");
  cudnnHandle_t dnn;
  check(cudnnCreate(&dnn), "cuDNN");
  check(cudnnSetStream(dnn, stream), "cuDNN stream");
  const std::size_t ws_bytes = 64 << 20;
  void* workspace = nullptr;
  check(cudaMalloc(&workspace, ws_bytes), "workspace");
  std::FILE* json = json_path != nullptr ? std::fopen(json_path, "w") : nullptr;
  if (json != nullptr) std::fprintf(json, "{\"format\": \"kiln.hopper-conv-bench/6\", \"gpu\": \"%s\", \"rows\": [\n", gpu.name.c_str());
  std::printf("%s; peaks: 989 TFLOP/s fp16, 1979 FP8 and int8 dense; DRAM %.2f TB/s (datasheet)\n", gpu.name.c_str(),
              gpu.bandwidth / 1e12);
  std::printf("kiln's epilogue: %s\n", epilogue_name);
  std::printf("%-10s %5s %5s %4s %8s %5s | %8s %8s %8s | %8s %8s %8s | %6s %6s %6s %6s %6s %6s\n", "model", "c",
              "k", "hw", "win", "batch", "cudnn16", "lt16", "kiln16", "lt8", "kiln8", "kilni8", "k16/dn", "k8/dn",
              "i8/dn", "k8%pk", "k16%bw", "k8%bw");
  std::mt19937 rng(7);
  bool first = true, failed = false;
  if (!timed && batches.size() == 3) batches = {1, 32};  // the reference is slow at batch 256
  for (int batch : batches) {
    for (const Layer& layer : kLayers) {
      if (only[0] != 0 && (layer.c != only[0] || layer.k != only[1] || layer.hw != only[2])) continue;
      Operands o = make_operands(layer, batch, rng);
      Row row;
      if (timed) {
        row.cudnn16 = time_cudnn(dnn, o, layer, batch, workspace, ws_bytes, stream);
        row.lt16 = time_cublaslt(lt, o, false, workspace, ws_bytes, stream);
        row.lt8 = time_cublaslt(lt, o, true, workspace, ws_bytes, stream);
      }
      if (has_residual(epilogue)) make_residual(o, rng);
      const auto run = [&](Operand operand) {
        return only_operand && *only_operand != operand
                   ? std::nullopt
                   : run_kiln(o, operand, epilogue, only_tile, timed, stream);
      };
      row.k16 = run(Operand::kF16);
      row.k8 = run(Operand::kE4m3);
      row.ki8 = run(Operand::kS8);
      failed = failed || row_failed(row, epilogue, only_operand);
      if (!timed) {
        print_checked(layer, batch, row);
      } else {
        print_row(layer, batch, o, epilogue, gpu, row);
        if (json != nullptr) write_json_row(json, first, layer, batch, epilogue_name, row);
        first = false;
      }
      free_operands(o);
    }
  }
  if (json != nullptr) {
    std::fprintf(json, "\n]}\n");
    std::fclose(json);
  }
  if (failed) std::printf("FAIL: a kiln tile missed the reference\n");
  return failed ? 1 : 0;
}
