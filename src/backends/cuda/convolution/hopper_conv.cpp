#include "backends/cuda/convolution/hopper_conv.h"

#include <cstdint>

#include "backends/cuda/convolution/tactic_key.h"
#include "backends/cuda/kernels/host_constants.h"

namespace kiln::cuda {

namespace {

using hopper::GemmConvTile;
using hopper::Operand;

bool pointwise(const ConvGeometry& g) {
  return g.r == 1 && g.s == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0 &&
         g.out_h == g.h && g.out_w == g.w;
}

// Undilated convolutions, dense or grouped: pointwise ones as the plain GEMM over x's rows, every other
// window through the copy engine's im2col loads (gemm_conv_takes() says which windows and groups).
bool undilated(const ConvGeometry& g) { return g.groups >= 1 && g.dilation_h == 1 && g.dilation_w == 1; }

hopper::GemmConvShape gemm_shape(const ConvGeometry& g, Operand operand) {
  const int channels_in = g.c / g.groups;
  hopper::GemmConvShape shape{
      g.n * g.out_h * g.out_w,
      g.k,
      channels_in,
      g.x_pitch != 0 ? g.x_pitch : g.c,
      g.y_pitch != 0 ? g.y_pitch : g.k,
      g.residual_pitch != 0 ? g.residual_pitch : g.k,
      {},
      g.groups,
      hopper::grouped_weight_tap_channels(channels_in, g.groups, hopper::operand_bytes(operand))};
  if (!pointwise(g)) {
    shape.window = {g.n, g.h, g.w, g.r, g.s, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.out_h, g.out_w};
  }
  return shape;
}

// The epilogue's kinds of input and output for `buffers` (gemm_conv_epilogue_takes() checks them): fp16,
// E4M3 or int8 residual, fp16 and/or E4M3 or int8 codes.
hopper::GemmConvEpilogue epilogue_of(const ConvBuffers& b) {
  hopper::GemmConvEpilogue e;
  if (b.residual_codes_scale > 0) {
    e.residual_codes = {static_cast<const std::uint8_t*>(b.residual), b.residual_codes_scale};
    e.residual_grid = b.residual_int8 ? hopper::CodeGrid::kInt8 : hopper::CodeGrid::kE4m3;
  } else {
    e.residual = static_cast<const __half*>(b.residual);
  }
  e.y = static_cast<__half*>(b.y);
  e.codes = b.codes;
  return e;
}

const char* residual_codes_variant(const ConvBuffers& b) {
  if (b.residual_codes_scale <= 0) return "";
  return b.residual_int8 ? "res-int8" : "res-e4m3";
}

}  // namespace

bool KilnHopperConv::takes(const ConvGeometry& g, Operand operand, const ConvBuffers& buffers) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!undilated(g) || !hopper::hopper_gpu() || !aligned(buffers.y) || !aligned(buffers.codes.codes) ||
      !aligned(buffers.residual) || !hopper::gemm_conv_epilogue_takes(operand, epilogue_of(buffers))) {
    return false;
  }
  const hopper::GemmConvShape s = gemm_shape(g, operand);
  for (const GemmConvTile& t : hopper::kGemmConvTiles) {
    if (hopper::gemm_conv_takes(s, operand, t, buffers.codes.codes != nullptr,
                                buffers.residual_codes_scale > 0))
      return true;
  }
  return false;
}

// As cuDNN's graph layers' keys: "fp8" for E4M3 operands ("int8" for int8 ones), "e4m3" for a layer
// writing codes ("codes-int8" for int8 ones); "res-e4m3" ("res-int8") for a residual read as codes.
KilnHopperConv::KilnHopperConv(const ConvGeometry& g, Operand operand, Act act, const ConvBuffers& buffers,
                               std::string_view gpu)
    : KilnConv(tactic_key({.runner = kApiKilnHopper,
                           .precision = operand == Operand::kF16    ? "f16"
                                        : operand == Operand::kE4m3 ? "fp8"
                                                                    : "int8",
                           .geometry = g,
                           .act = act,
                           .residual = buffers.residual != nullptr,
                           .variant = key_fields({buffers.codes.codes == nullptr ? ""
                                                  : buffers.int8_codes()         ? "codes-int8"
                                                                                 : "e4m3",
                                                  residual_codes_variant(buffers)})},
                          gpu),
               "Hopper convolution"),
      shape_(gemm_shape(g, operand)),
      operand_(operand),
      act_(act),
      residual_codes_(buffers.residual_codes_scale > 0),
      codes_(buffers.codes.codes != nullptr) {}

std::vector<int> KilnHopperConv::variants() const {
  std::vector<int> numbers;
  for (const GemmConvTile& t : hopper::kGemmConvTiles) numbers.push_back(hopper::tile_number(t));
  return numbers;
}

// Narrow-row tiles only where 128-byte rows would carry zeros: elsewhere they do the same work in twice
// the ring steps, and timing them would only lengthen the build.
bool KilnHopperConv::runs(int variant) const {
  const GemmConvTile t = hopper::tile_from_number(variant);
  const bool narrow_pays = hopper::rows_carry_zeros(shape_.tap_channels() * hopper::operand_bytes(operand_));
  return hopper::tile_number(t) == variant && (t.k_bytes == hopper::kRowBytes || narrow_pays) &&
         hopper::gemm_conv_takes(shape_, operand_, t, codes_, residual_codes_);
}

cudaError_t KilnHopperConv::launch(const ConvBuffers& b, int variant, cudaStream_t stream) const {
  hopper::GemmConvEpilogue e = epilogue_of(b);
  e.scale = hopper::operand_scaled(operand_) ? b.scale : nullptr;
  e.bias = static_cast<const float*>(b.bias);
  e.act = act_;
  return hopper::gemm_conv(operand_, b.x, b.weight, shape_, hopper::tile_from_number(variant), e, stream);
}

std::optional<KilnConvOffer> offer_hopper_conv(const KilnConvRequest& request) {
  const ConvLayer& layer = request.layer;
  const Operand operand = layer.int8 ? Operand::kS8 : layer.fp8 ? Operand::kE4m3 : Operand::kF16;
  if (request.elem != Elem::kF16 || layer.linear ||
      !KilnHopperConv::takes(layer.geometry, operand, layer.buffers)) {
    return std::nullopt;
  }
  ConvBuffers io = layer.buffers;
  // A quantized layer's bias is f32 already.
  if (!layer.fp8 && !layer.int8) io.bias = request.upload(layer.bias, Elem::kF32);
  // A grouped layer's taps padded to whole K blocks, where its channels are not.
  const int tap_channels = gemm_shape(layer.geometry, operand).tap_channels();
  if (tap_channels != layer.weights.dim(3))
    io.weight = request.upload_weights(pad_taps(layer.weights, tap_channels));
  return KilnConvOffer{
      std::make_shared<KilnHopperConv>(layer.geometry, operand, act_of(layer.activation), io, request.gpu),
      io};
}

}  // namespace kiln::cuda
