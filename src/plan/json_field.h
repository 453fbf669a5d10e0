// Typed access to a parsed plan header that turns every missing key or wrong type into one kiln::Error
// naming the file and the key: "model.kplan: header key 'graph.layers[3].op': expected a string".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

class JsonField {
 public:
  // `file` must outlive the field and everything taken from it.
  JsonField(const nlohmann::json& node, std::string_view file, std::string path = {});

  // A member that must be present; fails unless this is an object holding `key`.
  JsonField operator[](std::string_view key) const;
  // A member that may be absent.
  std::optional<JsonField> find(std::string_view key) const;
  // The elements of an array, of the given count when `count` is set.
  std::vector<JsonField> elements(std::optional<std::size_t> count = std::nullopt) const;

  std::int64_t as_int(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                      std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  double as_double() const;  // any finite number
  float as_float() const;    // a finite number within float's range
  bool as_bool() const;
  const std::string& as_string() const;
  std::vector<std::int64_t> as_int_vector(std::int64_t min, std::int64_t max) const;
  std::vector<std::string> as_string_vector() const;

  template <std::size_t N>
  std::array<std::int64_t, N> as_int_array(std::int64_t min, std::int64_t max) const {
    const std::vector<JsonField> items = elements(N);
    std::array<std::int64_t, N> result{};
    for (std::size_t i = 0; i < N; ++i) result[i] = items[i].as_int(min, max);
    return result;
  }
  template <std::size_t N>
  std::array<float, N> as_float_array() const {
    const std::vector<JsonField> items = elements(N);
    std::array<float, N> result{};
    for (std::size_t i = 0; i < N; ++i) result[i] = items[i].as_float();
    return result;
  }

  const nlohmann::json& json() const { return *node_; }
  const std::string& path() const { return path_; }
  std::string_view file() const { return file_; }

  // Throws "<file>: header key '<path>': <problem>".
  [[noreturn]] void fail(std::string_view problem) const;

 private:
  const nlohmann::json* node_;
  std::string_view file_;
  std::string path_;
};

}  // namespace kiln
