// Parsing JSON that users hand to kiln (config.json, calibration caches, plan headers) so that nothing
// nlohmann throws escapes as an internal error: a syntax error, a number beyond double's range
// ("1e328") or a value of an unexpected type becomes one kiln::Error naming the file, and so does JSON
// nested deeper than kiln's formats need.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.h"

namespace kiln {

// The deepest nesting kiln accepts in JSON it reads. Its own files nest under 10 levels (a plan's layer
// data), a timm config.json 3, a safetensors header 3. nlohmann parses without recursion but copies,
// compares and prints a value recursively, one stack frame per level, so a file nested 150,000 deep
// would overflow the stack long after it was read.
inline constexpr int kMaxJsonDepth = 64;

// For a parser callback: fails "<name>: JSON nests more than 64 levels deep" when an object or array
// starts inside kMaxJsonDepth others (`depth` is how many enclose it).
void require_json_depth(int depth, nlohmann::json::parse_event_t event, const std::string& name);

// nlohmann's message without its "[json.exception.<kind>.<id>] " tag, on one line.
std::string json_error_text(const nlohmann::json::exception& error);

// Parses `text`; fails "<name>: invalid JSON (byte N): ..." or "<name>: invalid JSON: ...", or as
// require_json_depth does.
nlohmann::json parse_user_json(std::string_view text, const std::string& name);

// Runs `read` (which walks JSON from `name`); a nlohmann exception it lets out, such as a type_error
// from a value() or get<>() on a value of another type, becomes "<name>: <what>: <nlohmann's text>".
template <typename Read>
auto with_json_errors(const std::string& name, std::string_view what, Read&& read) {
  try {
    return std::forward<Read>(read)();
  } catch (const nlohmann::json::exception& error) {
    fail(name, ": ", what, ": ", json_error_text(error));
  }
}

}  // namespace kiln
