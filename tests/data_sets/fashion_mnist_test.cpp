// The Fashion-MNIST subsets shipped in tests/data/fashion_mnist (README.md there says how they were
// made): they open as labelled webdatasets with the expected counts, classes and names, and decode;
// where Debian's dataset-fashion-mnist is installed, every image and label equals the IDX files'.
#include <gtest/gtest.h>

#include "data/class_names.h"
#include "data/idx_file.h"
#include "data/open_dataset.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(KILN_TEST_DATA_DIR) / "fashion_mnist";
const fs::path kPackage = "/usr/share/datasets/fashion-mnist";

// Sample i is image i of the IDX file: its label, and its grey value in each of the three channels.
void expect_equal_to_idx(const fs::path& folder, const std::string& set) {
  const fs::path images_path = kPackage / (set + "-images-idx3-ubyte.gz");
  if (!fs::exists(images_path))
    GTEST_SKIP() << images_path << " absent (apt-get install dataset-fashion-mnist)";
  const Dataset dataset = open_dataset(folder.string());
  const IdxImages images = read_idx_images(images_path, dataset.size());
  const IdxLabels labels = read_idx_labels(kPackage / (set + "-labels-idx1-ubyte.gz"), dataset.size());
  ASSERT_EQ(images.kept(), dataset.size());
  for (std::size_t i = 0; i < dataset.size(); ++i) {
    ASSERT_EQ(dataset.sample(i).label, labels.labels[i]) << dataset.sample(i).name;
    const Image image = dataset.load(i);
    for (std::size_t p = 0; p < 28 * 28; ++p) {
      for (std::size_t c = 0; c < 3; ++c) {
        ASSERT_EQ(image.rgb[3 * p + c], images.pixels[i * 28 * 28 + p])
            << dataset.sample(i).name << " pixel " << p;
      }
    }
  }
}

void expect_subset(const fs::path& folder, std::size_t images) {
  const Dataset dataset = open_dataset(folder.string());
  EXPECT_EQ(dataset.kind(), DatasetKind::kWebDataset);
  EXPECT_EQ(dataset.shards().size(), 1u);
  ASSERT_EQ(dataset.size(), images);
  EXPECT_TRUE(dataset.labelled());
  EXPECT_EQ(dataset.classes_seen(), 10u);
  dataset.check_labels(10);
  for (const std::size_t index : {std::size_t{0}, images / 2, images - 1}) {
    const Image image = dataset.load(index);
    EXPECT_EQ(image.width, 28);
    EXPECT_EQ(image.height, 28);
  }
  const std::vector<std::string> names = read_class_names(folder / "labels.txt");
  ASSERT_EQ(names.size(), 10u);
  EXPECT_EQ(names[0], "T-shirt/top");
  EXPECT_EQ(names[9], "Ankle boot");
}

TEST(FashionMnist, TestSubsetHas2500LabelledImagesOfTenClasses) {
  expect_subset(kRoot / "t10k-first2500", 2500);
  // The first test image of Fashion-MNIST is an ankle boot, the second a pullover.
  const Dataset dataset = open_dataset((kRoot / "t10k-first2500").string());
  EXPECT_EQ(dataset.sample(0).label, 9);
  EXPECT_EQ(dataset.sample(1).label, 2);
}

TEST(FashionMnist, CalibrationSubsetHas500LabelledImages) {
  expect_subset(kRoot / "train-first500-calibration", 500);
}

TEST(FashionMnist, TestSubsetEqualsTheIdxFiles) { expect_equal_to_idx(kRoot / "t10k-first2500", "t10k"); }

TEST(FashionMnist, CalibrationSubsetEqualsTheIdxFiles) {
  expect_equal_to_idx(kRoot / "train-first500-calibration", "train");
}

}  // namespace
}  // namespace kiln
