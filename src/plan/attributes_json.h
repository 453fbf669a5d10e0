// Node attributes in a plan header: {} for none, otherwise {STRUCT: {field: value, ...}} with the
// struct and every field named, so later versions can add fields without breaking old files.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "graph/attributes.h"
#include "plan/json_field.h"

namespace kiln {

// Fails (kiln::Error) on a float that JSON cannot hold (NaN, infinity).
nlohmann::json attributes_to_json(const Attributes& attrs);
// Fails naming the file and key on an unknown struct, a missing field or a wrong type.
Attributes attributes_from_json(const JsonField& field);

// Names used in the header for enums that have no parser elsewhere.
std::optional<Activation> activation_from_name(std::string_view name);

}  // namespace kiln
