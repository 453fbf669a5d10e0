// for_each_image: bad images are reported and skipped, or stop the loop when strict.
#include "data/image_loop.h"

#include <gtest/gtest.h>

#include <sstream>

#include "core/error.h"
#include "data/open_dataset.h"
#include "data_set_fixtures.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::ScratchDir;

// a.png, b.jpg (corrupt), c.png, d.png (empty): two bad images among four.
Dataset folder_with_bad_images(const ScratchDir& dir) {
  const fs::path root = dir.file("mixed");
  const std::string png = testing::png_bytes(dir.file(""), 6, 5);
  testing::write_text(root / "a.png", png);
  testing::write_text(root / "b.jpg", testing::photo_bytes().substr(0, 300));
  testing::write_text(root / "c.png", png);
  testing::write_text(root / "d.png", "");
  return open_dataset(root.string());
}

PreprocessConfig small_preprocess() {
  PreprocessConfig config;
  config.input_size = 4;
  config.crop_pct = 1.0;
  return config;
}

TEST(ImageLoop, CorruptImagesAreSkippedAndCounted) {
  ScratchDir dir;
  const Dataset dataset = folder_with_bad_images(dir);
  const std::vector<std::size_t> indices{0, 1, 2, 3};
  std::vector<std::size_t> seen;
  std::vector<SkippedImage> skipped;
  std::ostringstream log;
  std::ostringstream progress_out;
  Progress progress("calibrate", indices.size(), progress_out, false);
  const std::size_t count = for_each_image(
      dataset, indices, small_preprocess(),
      [&](std::size_t index, const Tensor& input) {
        EXPECT_EQ(input.shape(), (std::vector<std::int64_t>{3, 4, 4}));
        seen.push_back(index);
      },
      /*strict=*/false, &progress, log, &skipped);
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 2}));
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].index, 1u);
  EXPECT_EQ(skipped[1].index, 3u);
  const std::string text = log.str();
  EXPECT_NE(text.find("skipped " + dataset.sample(1).name + ": "), std::string::npos) << text;
  EXPECT_NE(text.find("skipped " + dataset.sample(3).name + ": "), std::string::npos) << text;
  EXPECT_NE(text.find("2 of 4 images skipped"), std::string::npos) << text;
  EXPECT_EQ(progress.done(), 4u);
  EXPECT_EQ(progress_out.str().rfind("calibrate 4/4 (100%)", 0), 0u) << progress_out.str();
}

TEST(ImageLoop, StrictStopsAtTheFirstBadImage) {
  ScratchDir dir;
  const Dataset dataset = folder_with_bad_images(dir);
  const std::vector<std::size_t> indices{0, 1, 2, 3};
  std::vector<std::size_t> seen;
  std::ostringstream log;
  try {
    for_each_decoded_image(
        dataset, indices, [&](std::size_t index, const Image&) { seen.push_back(index); }, /*strict=*/true,
        nullptr, log);
    FAIL() << "strict loop did not throw";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(dataset.sample(1).name), std::string::npos) << error.what();
  }
  EXPECT_EQ(seen, (std::vector<std::size_t>{0}));
}

TEST(ImageLoop, CallbackErrorsAreNotSkipped) {
  ScratchDir dir;
  const Dataset dataset = folder_with_bad_images(dir);
  const std::vector<std::size_t> indices{0};
  std::ostringstream log;
  EXPECT_THROW(
      for_each_decoded_image(
          dataset, indices, [](std::size_t, const Image&) { fail("callback failed"); }, false, nullptr, log),
      Error);
}

TEST(ImageLoop, AllGoodImagesSkipNone) {
  ScratchDir dir;
  const Dataset dataset = folder_with_bad_images(dir);
  const std::vector<std::size_t> indices{2, 0};
  std::vector<std::size_t> seen;
  std::ostringstream log;
  EXPECT_EQ(for_each_decoded_image(
                dataset, indices,
                [&](std::size_t index, const Image& image) {
                  EXPECT_EQ(image.width, 6);
                  seen.push_back(index);
                },
                false, nullptr, log),
            0u);
  EXPECT_EQ(seen, (std::vector<std::size_t>{2, 0}));
  EXPECT_NE(log.str().find("0 of 2 images skipped"), std::string::npos);
}

}  // namespace
}  // namespace kiln
