// Typed attributes, one struct per family of operators. A node holds the one its OpKind needs.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <variant>

namespace kiln {

enum class Activation : std::uint8_t { kNone, kRelu, kSilu, kSigmoid };
std::string_view activation_name(Activation activation);

struct ConvAttrs {
  std::array<std::int64_t, 2> kernel{1, 1};         // kh, kw
  std::array<std::int64_t, 2> stride{1, 1};         // sh, sw
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
  Activation activation = Activation::kNone;  // applied after the bias (set by fusion passes)
  bool operator==(const ConvAttrs&) const = default;
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool operator==(const BatchNormAttrs&) const = default;
};

struct ActivationAttrs {
  Activation activation = Activation::kRelu;
  bool operator==(const ActivationAttrs&) const = default;
};

struct PoolAttrs {
  std::array<std::int64_t, 2> kernel{1, 1};
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  bool operator==(const PoolAttrs&) const = default;
};

struct AddAttrs {
  Activation activation = Activation::kNone;  // applied to the sum (set by fusion passes)
  bool operator==(const AddAttrs&) const = default;
};

// Split attention (ResNeSt). Channels of a radix tensor are laid out [radix][channels]; the attention
// logits from fc2 are laid out [cardinality][radix][channels / cardinality], as timm's RadixSoftmax reads.
struct RadixAttrs {
  std::int64_t radix = 2;
  std::int64_t cardinality = 1;
  bool operator==(const RadixAttrs&) const = default;
};

// Per-tensor FP8 quantization: x is divided by `scale`, rounded to E4M3 (saturating at 448) and
// multiplied back, so the value carries exactly what an FP8 tensor with that scale can hold.
struct QuantizeAttrs {
  float scale = 1.0f;
  bool operator==(const QuantizeAttrs&) const = default;
};

struct ConcatAttrs {
  std::int64_t axis = 0;  // builders choose it (1: channels); the batch axis 0 is never valid
  bool operator==(const ConcatAttrs&) const = default;
};

// Channels [begin, end) of each of `groups` equal parts of axis 1 (groups 1: a plain channel range;
// groups = heads: one slice per attention head).
struct SliceAttrs {
  std::int64_t groups = 1;
  std::int64_t begin = 0;
  std::int64_t end = 1;
  bool operator==(const SliceAttrs&) const = default;
};

struct UpsampleAttrs {
  std::int64_t scale = 2;  // nearest neighbour, both axes
  bool operator==(const UpsampleAttrs&) const = default;
};

// YOLOv10's attention over the pixels of an image: per head, channels [key_dim q][key_dim k][head_dim v];
// out = v softmax(q^T k / sqrt(key_dim))^T, heads concatenated head-major.
struct AttentionAttrs {
  std::int64_t heads = 1;
  std::int64_t key_dim = 1;
  std::int64_t head_dim = 1;
  bool operator==(const AttentionAttrs&) const = default;
};

// One level of a YOLO detection head: 4 * reg_max distance bins (l, t, r, b) then class logits per pixel.
// Boxes: the expectation of each side's softmax over the bins, around the pixel centre, as centre x, y,
// width, height, times `stride` (input pixels); scores: sigmoid of the logits.
struct DetectAttrs {
  std::int64_t reg_max = 16;
  std::int64_t stride = 8;
  bool operator==(const DetectAttrs&) const = default;
};

using Attributes =
    std::variant<std::monostate, ConvAttrs, BatchNormAttrs, ActivationAttrs, PoolAttrs, AddAttrs, RadixAttrs,
                 QuantizeAttrs, ConcatAttrs, SliceAttrs, UpsampleAttrs, AttentionAttrs, DetectAttrs>;

}  // namespace kiln
