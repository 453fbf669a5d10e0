// Typed attributes, one struct per family of operators. A node holds the one its OpKind needs
// (op_info.h names it per operator).
//
// Each struct lists its fields once, in `fields()`: the plan file (plan/attributes_json.cpp) and the
// printer (graph/printer.cpp) walk that list, so a new struct or field is written down here only.
// `fields(attrs, visit)` calls visit("key", attrs.field) for floats, bools and activations and
// visit("key", attrs.field, minimum) for integers and integer arrays; `kName` is the struct's name in
// a plan file. Both are stored in plan files and must not change.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace kiln {

enum class Activation : std::uint8_t { kNone, kRelu, kSilu, kSigmoid };
std::string_view activation_name(Activation activation);

// The smallest value an integer field may hold: plan files are checked against it when read.
inline constexpr std::int64_t kPositive = 1;     // kernels, strides, dilations, groups, radices, ...
inline constexpr std::int64_t kNonNegative = 0;  // paddings, offsets

// A bool field added after plans without it were written: visit("key", attrs.field, kAbsentIsFalse).
// Such plans read it as false, and the printer shows it only when true, so older graphs print as before.
struct AbsentIsFalse {};
inline constexpr AbsentIsFalse kAbsentIsFalse{};

// A float list added after plans without it were written: visit("key", attrs.field, kAbsentIsEmpty).
// Such plans read it as empty, and plan files and the printer leave an empty list out, so older graphs
// write and print as before.
struct AbsentIsEmpty {};
inline constexpr AbsentIsEmpty kAbsentIsEmpty{};

// The sliding window convolutions and pools share.
template <typename Self, typename Visit>
void window_fields(Self& a, Visit&& visit) {
  visit("kernel", a.kernel, kPositive);
  visit("stride", a.stride, kPositive);
  visit("padding", a.padding, kNonNegative);
}

struct ConvAttrs {
  std::array<std::int64_t, 2> kernel{1, 1};         // kh, kw
  std::array<std::int64_t, 2> stride{1, 1};         // sh, sw
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
  Activation activation = Activation::kNone;  // applied after the bias (set by fusion passes)
  bool operator==(const ConvAttrs&) const = default;

  static constexpr std::string_view kName = "conv";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    window_fields(a, visit);
    visit("dilation", a.dilation, kPositive);
    visit("groups", a.groups, kPositive);
    visit("activation", a.activation);
  }
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  bool operator==(const BatchNormAttrs&) const = default;

  static constexpr std::string_view kName = "batch_norm";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("epsilon", a.epsilon);
  }
};

struct ActivationAttrs {
  Activation activation = Activation::kRelu;
  bool operator==(const ActivationAttrs&) const = default;

  static constexpr std::string_view kName = "activation";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("activation", a.activation);
  }
};

struct PoolAttrs {
  std::array<std::int64_t, 2> kernel{1, 1};
  std::array<std::int64_t, 2> stride{1, 1};
  std::array<std::int64_t, 4> padding{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling only
  bool operator==(const PoolAttrs&) const = default;

  static constexpr std::string_view kName = "pool";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    window_fields(a, visit);
    visit("ceil_mode", a.ceil_mode);
    visit("count_include_pad", a.count_include_pad);
  }
};

struct AddAttrs {
  Activation activation = Activation::kNone;  // applied to the sum (set by fusion passes)
  bool operator==(const AddAttrs&) const = default;

  static constexpr std::string_view kName = "add";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("activation", a.activation);
  }
};

// Split attention (ResNeSt). Channels of a radix tensor are laid out [radix][channels]; the attention
// logits from fc2 are laid out [cardinality][radix][channels / cardinality], as timm's RadixSoftmax reads.
struct RadixAttrs {
  std::int64_t radix = 2;
  std::int64_t cardinality = 1;
  bool operator==(const RadixAttrs&) const = default;

  static constexpr std::string_view kName = "radix";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("radix", a.radix, kPositive);
    visit("cardinality", a.cardinality, kPositive);
  }
};

// Quantization, so the value carries exactly what a quantized tensor with that scale can hold.
// FP8: x is divided by `scale`, rounded to E4M3 (saturating at 448) and multiplied back. int8: x is
// rounded to an int8 code (core/dtype.h's quantize_to_int8) and multiplied back.
//
// int8 only: `channel_scales`, when not empty, gives one scale per channel (axis 1 of the activation,
// its length the channel count) in place of `scale`, which then holds the largest of them. Depthwise
// convolutions read each channel alone, so a channel's codes need not share the widest channel's
// scale (quant/depthwise_inputs.h says where the builder uses it).
struct QuantizeAttrs {
  float scale = 1.0f;
  bool int8 = false;
  std::vector<float> channel_scales = {};
  bool operator==(const QuantizeAttrs&) const = default;

  bool per_channel() const { return !channel_scales.empty(); }
  // The scale channel `channel` is quantized with (axis 1; any channel when per tensor).
  float scale_of(std::size_t channel) const { return per_channel() ? channel_scales[channel] : scale; }

  static constexpr std::string_view kName = "quantize";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("scale", a.scale);
    visit("int8", a.int8, kAbsentIsFalse);
    visit("channel_scales", a.channel_scales, kAbsentIsEmpty);
  }
};

struct ConcatAttrs {
  std::int64_t axis = 0;  // builders choose it (1: channels); the batch axis 0 is never valid
  bool operator==(const ConcatAttrs&) const = default;

  static constexpr std::string_view kName = "concat";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("axis", a.axis, kNonNegative);
  }
};

// Channels [begin, end) of each of `groups` equal parts of axis 1 (groups 1: a plain channel range;
// groups = heads: one slice per attention head).
struct SliceAttrs {
  std::int64_t groups = 1;
  std::int64_t begin = 0;
  std::int64_t end = 1;
  bool operator==(const SliceAttrs&) const = default;

  static constexpr std::string_view kName = "slice";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("groups", a.groups, kPositive);
    visit("begin", a.begin, kNonNegative);
    visit("end", a.end, kPositive);
  }
};

struct UpsampleAttrs {
  std::int64_t scale = 2;  // nearest neighbour, both axes
  bool operator==(const UpsampleAttrs&) const = default;

  static constexpr std::string_view kName = "upsample";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("scale", a.scale, kPositive);
  }
};

// YOLOv10's attention over the pixels of an image: per head, channels [key_dim q][key_dim k][head_dim v];
// out = v softmax(q^T k / sqrt(key_dim))^T, heads concatenated head-major.
struct AttentionAttrs {
  std::int64_t heads = 1;
  std::int64_t key_dim = 1;
  std::int64_t head_dim = 1;
  bool operator==(const AttentionAttrs&) const = default;

  static constexpr std::string_view kName = "attention";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("heads", a.heads, kPositive);
    visit("key_dim", a.key_dim, kPositive);
    visit("head_dim", a.head_dim, kPositive);
  }
};

// One level of a YOLO detection head: 4 * reg_max distance bins (l, t, r, b) then class logits per pixel.
// Boxes: the expectation of each side's softmax over the bins, around the pixel centre, as centre x, y,
// width, height, times `stride` (input pixels); scores: sigmoid of the logits.
struct DetectAttrs {
  std::int64_t reg_max = 16;
  std::int64_t stride = 8;
  bool operator==(const DetectAttrs&) const = default;

  static constexpr std::string_view kName = "detect";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("reg_max", a.reg_max, kPositive);
    visit("stride", a.stride, kPositive);
  }
};

// YOLOv10's NMS-free selection from decoded predictions [N, 4 + classes, anchors]: the `max_det` anchors
// with the highest best-class score, then the `max_det` highest (anchor, class) scores among them.
struct DetectSelectAttrs {
  std::int64_t max_det = 300;
  bool operator==(const DetectSelectAttrs&) const = default;

  static constexpr std::string_view kName = "detect_select";
  template <typename Self, typename Visit>
  static void fields(Self& a, Visit&& visit) {
    visit("max_det", a.max_det, kPositive);
  }
};

// std::monostate: the operator has no attributes.
using Attributes = std::variant<std::monostate, ConvAttrs, BatchNormAttrs, ActivationAttrs, PoolAttrs,
                                AddAttrs, RadixAttrs, QuantizeAttrs, ConcatAttrs, SliceAttrs, UpsampleAttrs,
                                AttentionAttrs, DetectAttrs, DetectSelectAttrs>;
inline constexpr std::size_t kAttributeStructCount = std::variant_size_v<Attributes>;

namespace detail {

template <typename A, typename... Alternatives>
constexpr std::size_t alternative_index(const std::variant<Alternatives...>* /*variant*/) {
  constexpr std::array<bool, sizeof...(Alternatives)> matches{std::is_same_v<A, Alternatives>...};
  for (std::size_t i = 0; i < matches.size(); ++i) {
    if (matches[i]) return i;
  }
  return matches.size();
}

template <typename A>
constexpr std::string_view struct_name() {
  if constexpr (std::is_same_v<A, std::monostate>) {
    return "none";
  } else {
    return A::kName;
  }
}

template <std::size_t... I>
constexpr std::array<std::string_view, sizeof...(I)> struct_names(std::index_sequence<I...> /*indices*/) {
  return {struct_name<std::variant_alternative_t<I, Attributes>>()...};
}

}  // namespace detail

// The index of struct A in Attributes (what Attributes::index() returns for a node holding an A).
template <typename A>
inline constexpr std::size_t kAttributeIndex =
    detail::alternative_index<A>(static_cast<Attributes*>(nullptr));

// Each alternative's kName by index; "none" for std::monostate.
inline constexpr std::array<std::string_view, kAttributeStructCount> kAttributeStructNames =
    detail::struct_names(std::make_index_sequence<kAttributeStructCount>());

// Calls visit(attrs) on the struct a node holds, or nothing for std::monostate; for walking fields.
template <typename Visit>
void visit_attribute_struct(const Attributes& attrs, Visit&& visit) {
  std::visit(
      [&](const auto& alternative) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(alternative)>, std::monostate>)
          visit(alternative);
      },
      attrs);
}

}  // namespace kiln
