#include "plan/json_field.h"

#include <cmath>

#include "core/error.h"

namespace kiln {

JsonField::JsonField(const nlohmann::json& node, std::string_view file, std::string path)
    : node_(&node), file_(file), path_(std::move(path)) {}

void JsonField::fail(std::string_view problem) const {
  if (path_.empty()) kiln::fail(file_, ": header: ", problem);
  kiln::fail(file_, ": header key '", path_, "': ", problem);
}

namespace {

// Plain concatenation: paths are built on every access, and a stream per access is slow.
std::string member_path(const std::string& path, std::string_view key) {
  std::string result = path;
  if (!result.empty()) result += '.';
  result += key;
  return result;
}

}  // namespace

JsonField JsonField::operator[](std::string_view key) const {
  std::optional<JsonField> member = find(key);
  if (!member) JsonField(*node_, file_, member_path(path_, key)).fail("missing");
  return *member;
}

std::optional<JsonField> JsonField::find(std::string_view key) const {
  if (!node_->is_object()) fail("expected an object");
  const auto found = node_->find(key);
  if (found == node_->end()) return std::nullopt;
  return JsonField(*found, file_, member_path(path_, key));
}

std::vector<JsonField> JsonField::elements(std::optional<std::size_t> count) const {
  if (!node_->is_array())
    fail(count ? cat("expected an array of ", *count) : std::string("expected an array"));
  if (count && node_->size() != *count) fail(cat("expected an array of ", *count, ", got ", node_->size()));
  std::vector<JsonField> items;
  items.reserve(node_->size());
  for (std::size_t i = 0; i < node_->size(); ++i) {
    items.emplace_back((*node_)[i], file_, path_ + "[" + std::to_string(i) + "]");
  }
  return items;
}

std::int64_t JsonField::as_int(std::int64_t min, std::int64_t max) const {
  const auto range = [&] { return cat("expected an integer in [", min, ", ", max, "]"); };
  std::int64_t value = 0;
  if (node_->is_number_unsigned()) {
    const auto unsigned_value = node_->get<std::uint64_t>();
    if (unsigned_value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) fail(range());
    value = static_cast<std::int64_t>(unsigned_value);
  } else if (node_->is_number_integer()) {
    value = node_->get<std::int64_t>();
  } else {
    fail(range());
  }
  if (value < min || value > max) fail(cat(range(), ", got ", value));
  return value;
}

double JsonField::as_double() const {
  if (!node_->is_number()) fail("expected a number");
  const auto value = node_->get<double>();
  if (!std::isfinite(value)) fail("expected a finite number");
  return value;
}

float JsonField::as_float() const {
  const double value = as_double();
  if (std::fabs(value) > static_cast<double>(std::numeric_limits<float>::max())) fail("expected a float");
  return static_cast<float>(value);
}

bool JsonField::as_bool() const {
  if (!node_->is_boolean()) fail("expected true or false");
  return node_->get<bool>();
}

const std::string& JsonField::as_string() const {
  if (!node_->is_string()) fail("expected a string");
  return node_->get_ref<const std::string&>();
}

std::vector<std::int64_t> JsonField::as_int_vector(std::int64_t min, std::int64_t max) const {
  std::vector<std::int64_t> result;
  for (const JsonField& item : elements()) result.push_back(item.as_int(min, max));
  return result;
}

std::vector<std::string> JsonField::as_string_vector() const {
  std::vector<std::string> result;
  for (const JsonField& item : elements()) result.push_back(item.as_string());
  return result;
}

}  // namespace kiln
