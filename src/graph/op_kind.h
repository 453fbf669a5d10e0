// The operators kiln knows. This list is the one place an operator is registered: shape inference,
// the verifier, the printer and every backend switch over it without a default case, so the compiler
// finds every place a new operator must be handled.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

enum class OpKind : std::uint8_t {
  kConv2d,            // x, weight [O, I/groups, kh, kw], optional bias [O]       (ConvAttrs)
  kBatchNorm,         // x, gamma, beta, running_mean, running_var (per channel)  (BatchNormAttrs)
  kActivation,        // x                                                         (ActivationAttrs)
  kAdd,               // a, b of equal shape                                       (AddAttrs)
  kMaxPool2d,         // x                                                         (PoolAttrs)
  kAvgPool2d,         // x                                                         (PoolAttrs)
  kGlobalAvgPool,     // x [N, C, H, W] -> [N, C, 1, 1]
  kFlatten,           // x [N, C, 1, 1] -> [N, C]
  kLinear,            // x [N, K], weight [M, K], optional bias [M] -> [N, M]
  kRadixSum,          // x [N, R*C, H, W] -> [N, C, H, W], sum over the radix       (RadixAttrs)
  kRadixSoftmax,      // logits [N, R*C, 1, 1] -> weights [N, R*C, 1, 1]           (RadixAttrs)
  kRadixWeightedSum,  // x [N, R*C, H, W], weights [N, R*C, 1, 1] -> [N, C, H, W]  (RadixAttrs)
  // FP8 quantization points (see src/quant/). An FP8 layer reads its activation through a kQuantize and
  // its weight through a kDequantize; backends with FP8 kernels fuse the pair into the layer.
  kQuantize,      // x -> x on the E4M3 grid scaled by a per-tensor scale        (QuantizeAttrs)
  kDequantize,    // codes [O, ...] (E4M3 constant), scales [O] -> codes * scales per output channel
  kChannelScale,  // x [N, C, H, W], gate [N, C, 1, 1] -> x * gate per image and channel (squeeze-excite)
  // Detection (YOLOv10).
  kConcat,        // x0, x1, ... equal but for one axis -> joined along it           (ConcatAttrs)
  kChannelSlice,  // x [N, C, ...] -> channels [begin, end) of each of `groups` parts (SliceAttrs)
  kUpsample,      // x [N, C, H, W] -> [N, C, H*s, W*s], nearest                    (UpsampleAttrs)
  kAttention,  // qkv [N, heads*(2k+d), H, W] -> [N, heads*d, H, W], softmax(q'k/sqrt(k)) v (AttentionAttrs)
  kDetectDecode,  // x [N, 4*R + classes, H, W] -> [N, 4 + classes, H*W]: DFL boxes (xywh, pixels), sigmoid
                  // scores (DetectAttrs)
};

inline constexpr int kOpKindCount = 20;

std::string_view op_kind_name(OpKind op);
std::optional<OpKind> op_kind_from_name(std::string_view name);

}  // namespace kiln
