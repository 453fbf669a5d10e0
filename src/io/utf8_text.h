// Text kiln writes is valid UTF-8 whatever went into it. File names on Linux are bytes, not text, and a
// name that is not UTF-8 (a Latin-1 "caf\xe9.jpg") ends up in JSON reports, STUDY.md and SVG charts,
// whose readers require UTF-8 (nlohmann refuses to write it at all). Each byte that does not belong to
// well-formed UTF-8 is written as U+FFFD, the replacement character, as nlohmann's own `replace` handler
// and most decoders do: the text stays readable and the report says where a name was not text.
#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kiln {

// Offset of the first byte that does not belong to well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF), or npos.
std::size_t find_invalid_utf8(std::string_view text);

// `text` with every invalid byte replaced by U+FFFD; valid text comes back unchanged.
std::string valid_utf8(std::string_view text);

// `value` as JSON text (indented by `indent`, or compact for -1) plus a newline, invalid UTF-8 in its
// strings and keys written as U+FFFD.
std::string json_text(const nlohmann::json& value, int indent = 2);

// Writes json_text(value) to `path` atomically (a temp file, then renamed).
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value);

}  // namespace kiln
