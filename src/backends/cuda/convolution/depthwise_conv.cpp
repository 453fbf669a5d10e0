#include "backends/cuda/convolution/depthwise_conv.h"

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/kernels/host_constants.h"

namespace kiln::cuda {

bool KilnDepthwiseConv::takes(const ConvGeometry& g) { return g.groups > 1 && g.groups == g.c && g.k == g.c; }

KilnDepthwiseConv::KilnDepthwiseConv(Elem elem, const ConvGeometry& g, Act act, bool residual,
                                     std::string_view gpu)
    : KilnConv(tactic_key({.runner = kApiKilnDepthwise,
                           .precision = elem_name(elem),
                           .geometry = g,
                           .act = act,
                           .residual = residual},
                          gpu),
               "depthwise convolution"),
      elem_(elem),
      shape_{g.n, g.c,        g.h,        g.w,     g.out_h, g.out_w,      g.r,
             g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w},
      act_(act),
      residual_(residual) {}

cudaError_t KilnDepthwiseConv::launch(const ConvBuffers& b, int, cudaStream_t stream) const {
  return depthwise_conv(b.x, b.weight, b.bias, residual_ ? b.residual : nullptr, b.y, elem_, shape_, act_,
                        stream);
}

std::optional<KilnConvOffer> offer_depthwise_conv(const KilnConvRequest& request) {
  const ConvLayer& layer = request.layer;
  if (layer.linear || layer.fp8 || layer.codes || !KilnDepthwiseConv::takes(layer.geometry))
    return std::nullopt;
  ConvBuffers io = layer.buffers;
  io.weight = request.upload(depthwise_taps(layer.weights), request.elem);
  return KilnConvOffer{
      std::make_shared<KilnDepthwiseConv>(request.elem, layer.geometry, act_of(layer.activation),
                                          layer.residual, request.gpu),
      io};
}

}  // namespace kiln::cuda
