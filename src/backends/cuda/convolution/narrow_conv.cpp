#include "backends/cuda/convolution/narrow_conv.h"

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/kernels/host_constants.h"

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
                               const Tensor& bias, std::string_view gpu)
    : KilnConv(tactic_key({.runner = kApiKilnNarrow, .precision = elem_name(elem), .geometry = g, .act = act},
                          gpu),
               "narrow-input convolution"),
      elem_(elem),
      shape_(narrow_shape(g)),
      act_(act) {
  // As the other candidates' device copies hold them: rounded to the storage type.
  const DType stored = elem == Elem::kF32 ? DType::kF32 : DType::kF16;
  taps_ = taps.to(stored).to(DType::kF32);
  bias_ = bias.to(stored).to(DType::kF32);
}

cudaError_t KilnNarrowConv::launch(const ConvBuffers& b, int, cudaStream_t stream) const {
  return stem_conv(b.x, taps_.f32().data(), bias_.f32().data(), b.y, elem_, shape_, act_, stream);
}

std::optional<KilnConvOffer> offer_narrow_conv(const KilnConvRequest& request) {
  const ConvLayer& layer = request.layer;
  if (layer.linear || layer.fp8 || layer.codes || !KilnNarrowConv::takes(layer.geometry, layer.residual))
    return std::nullopt;
  return KilnConvOffer{
      std::make_shared<KilnNarrowConv>(request.elem, layer.geometry, act_of(layer.activation),
                                       narrow_conv_taps(layer.weights), layer.bias, request.gpu),
      layer.buffers};
}

}  // namespace kiln::cuda
