#include "io/user_json.h"

namespace kiln {

std::string json_error_text(const nlohmann::json::exception& error) {
  std::string message = error.what();
  const auto tag_end = message.find("] ");
  if (message.starts_with("[json.exception.") && tag_end != std::string::npos) message.erase(0, tag_end + 2);
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return message;
}

void require_json_depth(int depth, nlohmann::json::parse_event_t event, const std::string& name) {
  const bool starts = event == nlohmann::json::parse_event_t::object_start ||
                      event == nlohmann::json::parse_event_t::array_start;
  if (starts && depth >= kMaxJsonDepth) fail(name, ": JSON nests more than ", kMaxJsonDepth, " levels deep");
}

nlohmann::json parse_user_json(std::string_view text, const std::string& name) {
  // The callback sees every value before it is added, so the bound holds before anything deep exists.
  const auto bounded = [&name](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    require_json_depth(depth, event, name);
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), bounded);
  } catch (const nlohmann::json::parse_error& error) {
    fail(name, ": invalid JSON (byte ", error.byte, "): ", json_error_text(error));
  } catch (const nlohmann::json::exception& error) {
    fail(name, ": invalid JSON: ", json_error_text(error));  // e.g. a number beyond double's range
  }
}

}  // namespace kiln
