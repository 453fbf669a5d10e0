// make_fixture's photos for the C++ tests of the library: a photo's pixels with their view, the
// bit-for-bit comparison that image runs are held to, and the check of image runs against host runs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
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

// Image runs of `context` equal, bit for bit, host runs of the same context on make_fixture's host-
// preprocessed batches: two photos of other formats and sizes filling a batch of 2 (photos_input.f32), then
// one photo and a zero slot (dog_input.f32; the slot the full run filled must be cleared again). Encoded
// files and pixels alike.
inline void expect_image_runs_equal_host_batches(kiln::sdk::Context& context,
                                                 const std::filesystem::path& fixture) {
  const std::vector<float> both = context.run(read_all<float>(fixture / "photos_input.f32")).at(0);
  const std::vector<float> dog_alone = context.run(read_all<float>(fixture / "dog_input.f32")).at(0);
  ASSERT_NE(both, dog_alone);
  const auto dog = read_all<std::uint8_t>(fixture / "dog.jpg");
  const auto cat = read_all<std::uint8_t>(fixture / "chelsea.png");
  const std::vector<std::span<const std::uint8_t>> encoded = {dog, cat};
  expect_same_bits(context.run_images(encoded).at(0), both);
  expect_same_bits(context.run_images(std::span(encoded).first(1)).at(0), dog_alone);
  const FixturePixels dog_pixels = fixture_pixels(fixture, "dog"),
                      cat_pixels = fixture_pixels(fixture, "chelsea");
  const std::vector<kiln::sdk::ImageView> pixels = {dog_pixels.view, cat_pixels.view};
  expect_same_bits(context.run_images(pixels).at(0), both);
  expect_same_bits(context.run_images(std::span(pixels).first(1)).at(0), dog_alone);
}
