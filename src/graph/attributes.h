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
  std::array<std::int64_t, 2> kernel{1, 1};   // kh, kw
  std::array<std::int64_t, 2> stride{1, 1};   // sh, sw
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

using Attributes = std::variant<std::monostate, ConvAttrs, BatchNormAttrs, ActivationAttrs, PoolAttrs, AddAttrs,
                                RadixAttrs, QuantizeAttrs>;

}  // namespace kiln
