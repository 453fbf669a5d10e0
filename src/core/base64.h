// Base64 (RFC 4648, with padding), for binary or multi-line data kept on one line of a text file.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace kiln {

std::string base64_encode(std::string_view bytes);
// Nothing for text that is not padded base64 of the standard alphabet.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace kiln
