#include "pipeline/detection_drawing.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "pipeline/bitmap_font.h"

namespace kiln::pipeline {

namespace {

constexpr int kFontScale = 2;  // 3x5 glyphs drawn as 6x10 pixels
constexpr int kMargin = 2;     // band pixels around the caption

using Colour = std::array<std::uint8_t, 3>;

// A colour per class, bright enough on photos.
Colour class_colour(std::int64_t label) {
  return {static_cast<std::uint8_t>(64 + (label * 97) % 192),
          static_cast<std::uint8_t>(64 + (label * 57 + 80) % 192),
          static_cast<std::uint8_t>(64 + (label * 151 + 160) % 192)};
}

void put(Image& image, std::int64_t x, std::int64_t y, const Colour& colour) {
  if (x < 0 || y < 0 || x >= image.width || y >= image.height) return;
  std::copy(colour.begin(), colour.end(), image.rgb.begin() + (y * image.width + x) * 3);
}

void draw_rectangle(Image& image, std::int64_t x1, std::int64_t y1, std::int64_t x2, std::int64_t y2,
                    const Colour& colour) {
  for (std::int64_t t = 0; t < 2; ++t) {
    for (std::int64_t x = x1; x <= x2; ++x) {
      put(image, x, y1 + t, colour);
      put(image, x, y2 - t, colour);
    }
    for (std::int64_t y = y1; y <= y2; ++y) {
      put(image, x1 + t, y, colour);
      put(image, x2 - t, y, colour);
    }
  }
}

// Black text on a band of `colour` whose top-left corner is (x, y).
void draw_caption(Image& image, std::int64_t x, std::int64_t y, const std::string& text,
                  const Colour& colour) {
  const std::int64_t advance = (kGlyphWidth + 1) * kFontScale;
  const std::int64_t width = static_cast<std::int64_t>(text.size()) * advance + 2 * kMargin;
  const std::int64_t height = kGlyphHeight * kFontScale + 2 * kMargin;
  for (std::int64_t dy = 0; dy < height; ++dy) {
    for (std::int64_t dx = 0; dx < width; ++dx) put(image, x + dx, y + dy, colour);
  }
  const Colour ink = {0, 0, 0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    const Glyph pixels = glyph(text[i]);
    const std::int64_t left = x + kMargin + static_cast<std::int64_t>(i) * advance;
    for (int row = 0; row < kGlyphHeight; ++row) {
      for (int column = 0; column < kGlyphWidth; ++column) {
        if (!pixels[static_cast<std::size_t>(row * kGlyphWidth + column)]) continue;
        for (int s = 0; s < kFontScale * kFontScale; ++s)
          put(image, left + column * kFontScale + s % kFontScale,
              y + kMargin + row * kFontScale + s / kFontScale, ink);
      }
    }
  }
}

}  // namespace

void draw_detection(Image& image, const Detection& detection, const std::string& caption) {
  const Colour colour = class_colour(detection.label);
  const auto clamp = [](double v, std::int64_t hi) {
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::lround(v)), 0, hi - 1);
  };
  const std::int64_t x1 = clamp(detection.x1, image.width), x2 = clamp(detection.x2, image.width);
  const std::int64_t y1 = clamp(detection.y1, image.height), y2 = clamp(detection.y2, image.height);
  draw_rectangle(image, x1, y1, x2, y2, colour);
  // Above the box when there is room, else just inside its top edge.
  const std::int64_t band = kGlyphHeight * kFontScale + 2 * kMargin;
  draw_caption(image, x1, y1 >= band ? y1 - band : y1, caption, colour);
}

}  // namespace kiln::pipeline
