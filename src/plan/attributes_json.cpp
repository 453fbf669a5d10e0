#include "plan/attributes_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace kiln {

namespace {

// Attribute integers are extents, strides, paddings and counts. Their bounds keep the shape
// arithmetic a corrupt file can trigger away from overflow and division by zero.
constexpr std::int64_t kMaxAttribute = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kPositive = 1;     // smallest kernel, stride, dilation, group or radix
constexpr std::int64_t kNonNegative = 0;  // smallest padding

// Each struct's header name and fields, listed once so the reader and the writer cannot disagree.
// A struct added to Attributes without a Schema does not compile.
template <typename A>
struct Schema;

template <>
struct Schema<ConvAttrs> {
  static constexpr std::string_view kName = "conv";
  template <typename V>
  static void fields(ConvAttrs& a, V& visit) {
    visit("kernel", a.kernel, kPositive);
    visit("stride", a.stride, kPositive);
    visit("padding", a.padding, kNonNegative);
    visit("dilation", a.dilation, kPositive);
    visit("groups", a.groups, kPositive);
    visit("activation", a.activation);
  }
};

template <>
struct Schema<BatchNormAttrs> {
  static constexpr std::string_view kName = "batch_norm";
  template <typename V>
  static void fields(BatchNormAttrs& a, V& visit) {
    visit("epsilon", a.epsilon);
  }
};

template <>
struct Schema<ActivationAttrs> {
  static constexpr std::string_view kName = "activation";
  template <typename V>
  static void fields(ActivationAttrs& a, V& visit) {
    visit("activation", a.activation);
  }
};

template <>
struct Schema<PoolAttrs> {
  static constexpr std::string_view kName = "pool";
  template <typename V>
  static void fields(PoolAttrs& a, V& visit) {
    visit("kernel", a.kernel, kPositive);
    visit("stride", a.stride, kPositive);
    visit("padding", a.padding, kNonNegative);
    visit("ceil_mode", a.ceil_mode);
    visit("count_include_pad", a.count_include_pad);
  }
};

template <>
struct Schema<AddAttrs> {
  static constexpr std::string_view kName = "add";
  template <typename V>
  static void fields(AddAttrs& a, V& visit) {
    visit("activation", a.activation);
  }
};

template <>
struct Schema<RadixAttrs> {
  static constexpr std::string_view kName = "radix";
  template <typename V>
  static void fields(RadixAttrs& a, V& visit) {
    visit("radix", a.radix, kPositive);
    visit("cardinality", a.cardinality, kPositive);
  }
};

template <>
struct Schema<QuantizeAttrs> {
  static constexpr std::string_view kName = "quantize";
  template <typename V>
  static void fields(QuantizeAttrs& a, V& visit) {
    visit("scale", a.scale);
  }
};

template <>
struct Schema<ConcatAttrs> {
  static constexpr std::string_view kName = "concat";
  template <typename V>
  static void fields(ConcatAttrs& a, V& visit) {
    visit("axis", a.axis, kNonNegative);
  }
};

template <>
struct Schema<SliceAttrs> {
  static constexpr std::string_view kName = "slice";
  template <typename V>
  static void fields(SliceAttrs& a, V& visit) {
    visit("groups", a.groups, kPositive);
    visit("begin", a.begin, kNonNegative);
    visit("end", a.end, kPositive);
  }
};

template <>
struct Schema<UpsampleAttrs> {
  static constexpr std::string_view kName = "upsample";
  template <typename V>
  static void fields(UpsampleAttrs& a, V& visit) {
    visit("scale", a.scale, kPositive);
  }
};

template <>
struct Schema<AttentionAttrs> {
  static constexpr std::string_view kName = "attention";
  template <typename V>
  static void fields(AttentionAttrs& a, V& visit) {
    visit("heads", a.heads, kPositive);
    visit("key_dim", a.key_dim, kPositive);
    visit("head_dim", a.head_dim, kPositive);
  }
};

template <>
struct Schema<DetectAttrs> {
  static constexpr std::string_view kName = "detect";
  template <typename V>
  static void fields(DetectAttrs& a, V& visit) {
    visit("reg_max", a.reg_max, kPositive);
    visit("stride", a.stride, kPositive);
  }
};

class FieldWriter {
 public:
  explicit FieldWriter(nlohmann::json& out) : out_(out) {}
  // Integer bounds are the reader's business: the graph verifier has already judged the values.
  void operator()(std::string_view key, const std::int64_t& value, std::int64_t /*min*/) {
    out_[std::string(key)] = value;
  }
  template <std::size_t N>
  void operator()(std::string_view key, const std::array<std::int64_t, N>& value, std::int64_t /*min*/) {
    out_[std::string(key)] = value;
  }
  void operator()(std::string_view key, const float& value) {
    require(std::isfinite(value), "attribute '", key, "' is ", value, ", which a plan cannot store");
    out_[std::string(key)] = static_cast<double>(value);  // exact; reads back to the same float
  }
  void operator()(std::string_view key, const bool& value) { out_[std::string(key)] = value; }
  void operator()(std::string_view key, const Activation& value) {
    out_[std::string(key)] = std::string(activation_name(value));
  }

 private:
  nlohmann::json& out_;
};

class FieldReader {
 public:
  explicit FieldReader(const JsonField& object) : object_(object) {}
  void operator()(std::string_view key, std::int64_t& value, std::int64_t min) const {
    value = object_[key].as_int(min, kMaxAttribute);
  }
  template <std::size_t N>
  void operator()(std::string_view key, std::array<std::int64_t, N>& value, std::int64_t min) const {
    value = object_[key].as_int_array<N>(min, kMaxAttribute);
  }
  void operator()(std::string_view key, float& value) const { value = object_[key].as_float(); }
  void operator()(std::string_view key, bool& value) const { value = object_[key].as_bool(); }
  void operator()(std::string_view key, Activation& value) const {
    const JsonField field = object_[key];
    const std::optional<Activation> known = activation_from_name(field.as_string());
    if (!known) field.fail(cat("unknown activation '", field.as_string(), "'"));
    value = *known;
  }

 private:
  const JsonField& object_;
};

template <typename A>
void read_if_named(std::string_view name, const JsonField& fields, std::optional<Attributes>& result) {
  if constexpr (!std::is_same_v<A, std::monostate>) {
    if (result || name != Schema<A>::kName) return;
    A attrs;
    FieldReader reader(fields);
    Schema<A>::fields(attrs, reader);
    result = attrs;
  }
}

template <std::size_t... I>
std::optional<Attributes> read_named(std::string_view name, const JsonField& fields,
                                     std::index_sequence<I...> /*alternatives*/) {
  std::optional<Attributes> result;
  (read_if_named<std::variant_alternative_t<I, Attributes>>(name, fields, result), ...);
  return result;
}

}  // namespace

std::optional<Activation> activation_from_name(std::string_view name) {
  // Every value of the enum's underlying type is tried, so a new activation needs no edit here.
  for (int i = 0; i <= std::numeric_limits<std::underlying_type_t<Activation>>::max(); ++i) {
    const auto activation = static_cast<Activation>(i);
    if (activation_name(activation) == name && name != "unknown") return activation;
  }
  return std::nullopt;
}

nlohmann::json attributes_to_json(const Attributes& attrs) {
  return std::visit(
      [](const auto& alternative) {
        using A = std::decay_t<decltype(alternative)>;
        nlohmann::json result = nlohmann::json::object();
        if constexpr (!std::is_same_v<A, std::monostate>) {
          A copy = alternative;  // Schema::fields takes a mutable struct so the reader can share it
          nlohmann::json fields = nlohmann::json::object();
          FieldWriter writer(fields);
          Schema<A>::fields(copy, writer);
          result[std::string(Schema<A>::kName)] = std::move(fields);
        }
        return result;
      },
      attrs);
}

Attributes attributes_from_json(const JsonField& field) {
  if (!field.json().is_object()) field.fail("expected an object");
  if (field.json().empty()) return std::monostate{};
  if (field.json().size() != 1) field.fail("expected one attribute struct");
  const std::string name = field.json().begin().key();  // a copy: key() refers into a temporary iterator
  const std::optional<Attributes> attrs =
      read_named(name, field[name], std::make_index_sequence<std::variant_size_v<Attributes>>());
  if (!attrs) field.fail(cat("unknown attribute struct '", name, "'"));
  return *attrs;
}

}  // namespace kiln
