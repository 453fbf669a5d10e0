#include "core/error.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace kiln {
namespace {

TEST(Error, CatJoinsAnythingStreamable) {
  EXPECT_EQ(cat("layer ", 3, ": expected ", 1.5, " got ", 'x'), "layer 3: expected 1.5 got x");
  EXPECT_EQ(cat(std::string("a"), "b"), "ab");
  EXPECT_EQ(cat(), "");
}

TEST(Error, FailThrowsTheJoinedMessage) {
  try {
    fail("weights.safetensors: tensor ", "stem.conv.weight", " has 3 dims, expected 4");
    FAIL() << "fail() returned";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "weights.safetensors: tensor stem.conv.weight has 3 dims, expected 4");
  }
}

TEST(Error, IsARuntimeError) { EXPECT_THROW(fail("x"), std::runtime_error); }

TEST(Error, RequireThrowsOnlyWhenTheConditionFails) {
  EXPECT_NO_THROW(require(true, "never shown"));
  try {
    require(1 + 1 == 3, "expected ", 3, ", got ", 1 + 1);
    FAIL() << "require(false) returned";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "expected 3, got 2");
  }
}

}  // namespace
}  // namespace kiln
