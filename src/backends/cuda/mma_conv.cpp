#include "backends/cuda/mma_conv.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

namespace {

MmaConvShape mma_shape(const ConvGeometry& g) {
  return {g.n,
          g.c,
          g.h,
          g.w,
          g.k,
          g.out_h,
          g.out_w,
          g.r,
          g.stride_h,
          g.stride_w,
          g.pad_h,
          g.pad_w,
          g.x_pitch != 0 ? g.x_pitch : g.c,
          g.y_pitch != 0 ? g.y_pitch : g.k,
          g.residual_pitch != 0 ? g.residual_pitch : g.k};
}

// Every variant, fewest registers first.
constexpr MmaConvVariant kVariants[] = {{1, 1}, {1, 2}, {2, 1}, {1, 4}, {2, 2}, {1, 8}, {2, 4}};

bool square_dense(const ConvGeometry& g) {
  return g.groups == 1 && g.r == g.s && g.dilation_h == 1 && g.dilation_w == 1;
}

}  // namespace

bool KilnMmaConv::takes(const ConvGeometry& g) {
  if (!square_dense(g)) return false;
  const MmaConvShape s = mma_shape(g);
  for (const MmaConvVariant& v : kVariants) {
    if (mma_conv_takes(s, v)) return true;
  }
  return false;
}

KilnMmaConv::KilnMmaConv(const ConvGeometry& g, Act act, bool residual)
    : shape_(mma_shape(g)), act_(act), residual_(residual) {
  key_ = cat("kiln-mma:f16:n", g.n, "c", g.c, "h", g.h, "w", g.w, "k", g.k, "r", g.r, "s", g.s, "p", g.pad_h,
             "x", g.pad_w, "u", g.stride_h, "x", g.stride_w, ":pitch", shape_.x_pitch, "x", shape_.y_pitch,
             "x", shape_.residual_pitch, ":act", static_cast<int>(act), ":res", residual ? 1 : 0);
}

bool KilnMmaConv::restore(const TacticRecord& stored) {
  const MmaConvVariant v{stored.algorithm / 16, stored.algorithm % 16};
  if (!mma_conv_takes(shape_, v)) return false;
  variant_ = v;
  return true;
}

cudaError_t KilnMmaConv::launch(const ConvBuffers& b, const MmaConvVariant& variant,
                                cudaStream_t stream) const {
  return mma_conv(b.x, b.weight, b.bias, residual_ ? b.residual : nullptr, b.y, shape_, variant, act_,
                  stream);
}

void KilnMmaConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void*, std::size_t) {
  for (const MmaConvVariant& v : kVariants) {
    if (!mma_conv_takes(shape_, v)) continue;
    if (!race.offer({v, 0}, [&](cudaStream_t s) { return launch(buffers, v, s) == cudaSuccess; })) return;
  }
}

void KilnMmaConv::enqueue(const ConvBuffers& buffers, void*, cudaStream_t stream) const {
  check(launch(buffers, variant_, stream), cat("running tensor-core convolution ", key_));
}

}  // namespace kiln::cuda
