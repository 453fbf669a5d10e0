#include "backends/cuda/hopper/conv_tactic.h"

#include <cstdint>

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

namespace {

using hopper::GemmConvTile;
using hopper::Operand;

bool pointwise(const ConvGeometry& g) {
  return g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.out_h == g.h && g.out_w == g.w;
}

// Dense convolutions: pointwise ones as the plain GEMM over x's rows, every other window through the
// copy engine's im2col loads (gemm_conv_takes() says which windows).
bool dense(const ConvGeometry& g) { return g.groups == 1 && g.dilation_h == 1 && g.dilation_w == 1; }

hopper::GemmConvShape gemm_shape(const ConvGeometry& g) {
  hopper::GemmConvShape shape{g.n * g.out_h * g.out_w, g.k, g.c, g.x_pitch != 0 ? g.x_pitch : g.c,
                              g.y_pitch != 0 ? g.y_pitch : g.k, g.residual_pitch != 0 ? g.residual_pitch : g.k, {}};
  if (!pointwise(g)) {
    shape.window = {g.n, g.h, g.w, g.r, g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.out_h, g.out_w};
  }
  return shape;
}

}  // namespace

bool KilnHopperConv::takes(const ConvGeometry& g, Operand operand, const ConvBuffers& buffers) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!dense(g) || !hopper::hopper_gpu() || !aligned(buffers.y) || !aligned(buffers.codes.codes) ||
      !aligned(buffers.residual)) {
    return false;
  }
  const hopper::GemmConvShape s = gemm_shape(g);
  for (const GemmConvTile& t : hopper::kGemmConvTiles) {
    if (hopper::gemm_conv_takes(s, operand, t, buffers.codes.codes != nullptr)) return true;
  }
  return false;
}

KilnHopperConv::KilnHopperConv(const ConvGeometry& g, Operand operand, Act act, bool residual, E4m3Out codes)
    : shape_(gemm_shape(g)), operand_(operand), act_(act), residual_(residual), codes_(codes.codes != nullptr) {
  // As cuDNN's layers' keys: "fp8" for E4M3 operands, ":e4m3" last for a layer writing codes.
  const hopper::GemmConvWindow& w = shape_.window;
  key_ = cat("kiln-hopper:", operand == Operand::kF16 ? "f16" : "fp8", ":m", shape_.pixels, "n",
             shape_.channels_out, "k", shape_.channels_in, ":pitch", shape_.x_pitch, "x", shape_.y_pitch, "x",
             shape_.residual_pitch,
             w.batch == 0 ? std::string() : cat(":in", w.height, "x", w.width, ":r", w.kernel_h, "x", w.kernel_w,
                                                ":s", w.stride_h, "x", w.stride_w, ":p", w.pad_h, "x", w.pad_w),
             ":act", static_cast<int>(act), ":res", residual ? 1 : 0, codes_ ? ":e4m3" : "");
}

bool KilnHopperConv::restore(const TacticRecord& stored) {
  const GemmConvTile t = hopper::tile_from_number(stored.algorithm);
  if (!hopper::gemm_conv_takes(shape_, operand_, t, codes_)) return false;
  tile_ = t;
  return true;
}

cudaError_t KilnHopperConv::launch(const ConvBuffers& b, const GemmConvTile& tile, cudaStream_t stream) const {
  hopper::GemmConvEpilogue e;
  e.scale = operand_ == Operand::kE4m3 ? b.scale : nullptr;
  e.bias = static_cast<const float*>(b.bias);
  e.residual = residual_ ? static_cast<const __half*>(b.residual) : nullptr;
  e.act = act_;
  e.y = static_cast<__half*>(b.y);
  e.codes = b.codes;
  return hopper::gemm_conv(operand_, b.x, b.weight, shape_, tile, e, stream);
}

void KilnHopperConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void*, std::size_t) {
  for (const GemmConvTile& t : hopper::kGemmConvTiles) {
    if (!hopper::gemm_conv_takes(shape_, operand_, t, codes_)) continue;
    if (!race.offer({t, 0}, [&](cudaStream_t s) { return launch(buffers, t, s) == cudaSuccess; })) return;
  }
}

void KilnHopperConv::enqueue(const ConvBuffers& buffers, void*, cudaStream_t stream) const {
  check(launch(buffers, tile_, stream), cat("running Hopper convolution ", key_));
}

}  // namespace kiln::cuda
