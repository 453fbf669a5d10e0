#include "plan/attributes_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace kiln {

namespace {

// Attribute integers are extents, strides, paddings and counts. Their bounds (the minimum each field's
// schema in graph/attributes.h gives, and this maximum) keep the shape arithmetic a corrupt file can
// trigger away from overflow and division by zero.
constexpr std::int64_t kMaxAttribute = std::numeric_limits<std::int32_t>::max();

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
  void operator()(std::string_view key, const bool& value, AbsentIsFalse) { out_[std::string(key)] = value; }
  void operator()(std::string_view key, const std::vector<float>& values, AbsentIsEmpty) {
    if (values.empty()) return;  // as plans without the field hold it
    nlohmann::json list = nlohmann::json::array();
    for (const float value : values) {
      require(std::isfinite(value), "attribute '", key, "' holds ", value, ", which a plan cannot store");
      list.push_back(static_cast<double>(value));
    }
    out_[std::string(key)] = std::move(list);
  }
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
  void operator()(std::string_view key, bool& value, AbsentIsFalse) const {
    const std::optional<JsonField> field = object_.find(key);
    value = field ? field->as_bool() : false;
  }
  void operator()(std::string_view key, std::vector<float>& values, AbsentIsEmpty) const {
    values.clear();
    const std::optional<JsonField> field = object_.find(key);
    if (!field) return;
    for (const JsonField& item : field->elements()) values.push_back(item.as_float());
    if (values.empty()) field->fail("expected a non-empty list (a field with no values is left out)");
  }
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
    if (result || name != A::kName) return;
    A attrs;
    FieldReader reader(fields);
    A::fields(attrs, reader);
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
  nlohmann::json result = nlohmann::json::object();
  visit_attribute_struct(attrs, [&](const auto& alternative) {
    using A = std::decay_t<decltype(alternative)>;
    nlohmann::json fields = nlohmann::json::object();
    FieldWriter writer(fields);
    A::fields(alternative, writer);
    result[std::string(A::kName)] = std::move(fields);
  });
  return result;
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
