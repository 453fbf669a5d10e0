// A 3x5 pixel bitmap font for box captions: lower-case letters (upper case is drawn as lower case),
// digits, and a few signs; any other character is drawn as a question mark. The glyphs are kiln's
// own, drawn for this file.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace kiln::pipeline {

inline constexpr int kGlyphWidth = 3, kGlyphHeight = 5;

// Row-major, true where the glyph is inked.
using Glyph = std::array<bool, kGlyphWidth * kGlyphHeight>;

Glyph glyph(char c);

}  // namespace kiln::pipeline
