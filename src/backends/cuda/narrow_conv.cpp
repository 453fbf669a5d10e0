#include "backends/cuda/narrow_conv.h"

#include "backends/cuda/cuda_util.h"

namespace kiln::cuda {

namespace {

NarrowConvShape narrow_shape(const ConvGeometry& g) {
  return {g.n, g.c,        g.h,        g.w,     g.k,     g.out_h,      g.out_w,     g.r,
          g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w};
}

}  // namespace

bool KilnNarrowConv::takes(const ConvGeometry& g, bool residual) {
  return g.groups == 1 && narrow_conv_is_stem(narrow_shape(g), residual);
}

KilnNarrowConv::KilnNarrowConv(Elem elem, const ConvGeometry& g, Act act, const Tensor& taps,
                               const Tensor& bias)
    : elem_(elem), shape_(narrow_shape(g)), act_(act) {
  // As the other candidates' device copies hold them: rounded to the storage type.
  const DType stored = elem == Elem::kF32 ? DType::kF32 : DType::kF16;
  taps_ = taps.to(stored).to(DType::kF32);
  bias_ = bias.to(stored).to(DType::kF32);
  key_ = cat("kiln-narrow:", elem == Elem::kF32 ? "f32" : "f16", ":n", g.n, "c", g.c, "h", g.h, "w", g.w, "k",
             g.k, "r", g.r, "s", g.s, "p", g.pad_h, "x", g.pad_w, "u", g.stride_h, "x", g.stride_w, "d",
             g.dilation_h, "x", g.dilation_w, ":act", static_cast<int>(act), ":res0");
}

cudaError_t KilnNarrowConv::launch(const ConvBuffers& b, cudaStream_t stream) const {
  return stem_conv(b.x, taps_.f32().data(), bias_.f32().data(), b.y, elem_, shape_, act_, stream);
}

void KilnNarrowConv::offer_candidates(TacticRace<Tactic>& race, const ConvBuffers& buffers, void*,
                                      std::size_t) {
  race.offer({}, [&](cudaStream_t s) { return launch(buffers, s) == cudaSuccess; });
}

void KilnNarrowConv::enqueue(const ConvBuffers& buffers, void*, cudaStream_t stream) const {
  check(launch(buffers, stream), cat("running narrow-input convolution ", key_));
}

}  // namespace kiln::cuda
