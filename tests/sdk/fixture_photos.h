// make_fixture's photos for the C++ tests of the library: a photo's pixels with their view, and the
// bit-for-bit comparison that image runs are held to.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"
#include "read_all.h"

// The photo's decoded RGB (make_fixture's STEM.rgb and STEM.size), kept alive beside the view of it.
struct FixturePixels {
  std::vector<std::uint8_t> rgb;
  kiln::sdk::ImageView view;
};

inline FixturePixels fixture_pixels(const std::filesystem::path& fixture, const std::string& stem) {
  FixturePixels pixels{read_all<std::uint8_t>(fixture / (stem + ".rgb")), {}};
  std::ifstream(fixture / (stem + ".size")) >> pixels.view.width >> pixels.view.height;
  pixels.view.pixels = pixels.rgb;
  return pixels;
}

inline void expect_same_bits(const std::vector<float>& got, const std::vector<float>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0);
}
