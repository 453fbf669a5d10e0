#include "backends/cuda/hopper/pointwise_conv.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

namespace {

using hopper::GemmConvTile;
using hopper::Operand;

bool pointwise(const ConvGeometry& g) {
  return g.groups == 1 && g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0 && g.out_h == g.h && g.out_w == g.w;
}

hopper::GemmConvShape gemm_shape(const ConvGeometry& g) {
  return {g.n * g.h * g.w, g.k, g.c, g.x_pitch != 0 ? g.x_pitch : g.c, g.y_pitch != 0 ? g.y_pitch : g.k,
          g.residual_pitch != 0 ? g.residual_pitch : g.k};
}

// Every tile, fewest threads and columns first.
constexpr GemmConvTile kTiles[] = {{64, 1}, {128, 1}, {64, 2}, {256, 1}, {128, 2}, {256, 2}};

}  // namespace

bool KilnHopperConv::takes(const ConvGeometry& g, Operand operand) {
  if (!pointwise(g) || !hopper::hopper_gpu()) return false;
  const hopper::GemmConvShape s = gemm_shape(g);
  for (const GemmConvTile& t : kTiles) {
    if (hopper::gemm_conv_takes(s, operand, t)) return true;
  }
  return false;
}

KilnHopperConv::KilnHopperConv(const ConvGeometry& g, Operand operand, Act act, bool residual, E4m3Out codes)
    : shape_(gemm_shape(g)), operand_(operand), act_(act), residual_(residual), codes_(codes.codes != nullptr) {
  // As cuDNN's layers' keys: "fp8" for E4M3 operands, ":e4m3" last for a layer writing codes.
  key_ = cat("kiln-hopper:", operand == Operand::kF16 ? "f16" : "fp8", ":m", shape_.pixels, "n",
             shape_.channels_out, "k", shape_.channels_in, ":pitch", shape_.x_pitch, "x", shape_.y_pitch, "x",
             shape_.residual_pitch, ":act", static_cast<int>(act), ":res", residual ? 1 : 0,
             codes_ ? ":e4m3" : "");
}

bool KilnHopperConv::restore(const TacticRecord& stored) {
  const GemmConvTile t{stored.algorithm / 10, stored.algorithm % 10};
  if (!hopper::gemm_conv_takes(shape_, operand_, t)) return false;
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
  for (const GemmConvTile& t : kTiles) {
    if (!hopper::gemm_conv_takes(shape_, operand_, t)) continue;
    if (!race.offer({t, 0}, [&](cudaStream_t s) { return launch(buffers, t, s) == cudaSuccess; })) return;
  }
}

void KilnHopperConv::enqueue(const ConvBuffers& buffers, void*, cudaStream_t stream) const {
  check(launch(buffers, tile_, stream), cat("running Hopper convolution ", key_));
}

}  // namespace kiln::cuda
