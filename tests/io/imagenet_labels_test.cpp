// The ImageNet class names compiled into the binary.
#include "io/imagenet_labels.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(ImagenetLabels, ThousandNamesInClassOrder) {
  const auto& names = imagenet_class_names();
  ASSERT_EQ(names.size(), 1000u);
  EXPECT_EQ(names[0], "tench, Tinca tinca");
  EXPECT_EQ(names[1], "goldfish, Carassius auratus");
  EXPECT_EQ(names[207], "golden retriever");
  EXPECT_EQ(names[999], "toilet tissue, toilet paper, bathroom tissue");
  for (const auto& name : names) {
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find('\n'), std::string::npos);
    EXPECT_EQ(name.find('\r'), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln
