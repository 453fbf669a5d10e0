#include "backends/cuda/convolution/mma_conv.h"

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/kernels/host_constants.h"

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

MmaConvVariant variant_of(int number) { return {number / 16, number % 16}; }

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

KilnMmaConv::KilnMmaConv(const ConvGeometry& g, Act act, bool residual, std::string_view gpu)
    : KilnConv(
          tactic_key(
              {.runner = kApiKilnMma, .precision = "f16", .geometry = g, .act = act, .residual = residual},
              gpu),
          "tensor-core convolution"),
      shape_(mma_shape(g)),
      act_(act),
      residual_(residual) {}

std::vector<int> KilnMmaConv::variants() const {
  std::vector<int> numbers;
  for (const MmaConvVariant& v : kVariants) numbers.push_back(mma_variant_number(v));
  return numbers;
}

bool KilnMmaConv::runs(int variant) const {
  const MmaConvVariant v = variant_of(variant);
  return mma_variant_number(v) == variant && mma_conv_takes(shape_, v);
}

cudaError_t KilnMmaConv::launch(const ConvBuffers& b, int variant, cudaStream_t stream) const {
  return mma_conv(b.x, b.weight, b.bias, residual_ ? b.residual : nullptr, b.y, shape_, variant_of(variant),
                  act_, stream);
}

std::optional<KilnConvOffer> offer_mma_conv(const KilnConvRequest& request) {
  const ConvLayer& layer = request.layer;
  if (request.elem != Elem::kF16 || layer.linear || layer.fp8 || layer.codes || !request.options.mma_conv ||
      !KilnMmaConv::takes(layer.geometry))
    return std::nullopt;
  ConvBuffers io = layer.buffers;
  io.weight = request.upload(mma_conv_fragments(layer.weights), request.elem);
  return KilnConvOffer{
      std::make_shared<KilnMmaConv>(layer.geometry, act_of(layer.activation), layer.residual, request.gpu),
      io};
}

}  // namespace kiln::cuda
