// expand_braces: shard lists as webdataset users write them.
#include "data/brace_pattern.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace kiln {
namespace {

using Names = std::vector<std::string>;

TEST(BracePattern, ZeroPaddedRange) {
  EXPECT_EQ(expand_braces("/d/shard-{000000..000002}.tar"),
            (Names{"/d/shard-000000.tar", "/d/shard-000001.tar", "/d/shard-000002.tar"}));
  EXPECT_EQ(expand_braces("s{8..11}.tar"), (Names{"s8.tar", "s9.tar", "s10.tar", "s11.tar"}));
  EXPECT_EQ(expand_braces("s{08..10}"), (Names{"s08", "s09", "s10"}));
}

TEST(BracePattern, ListsAndSeveralGroups) {
  EXPECT_EQ(expand_braces("{train,val}-{0..1}.tar"),
            (Names{"train-0.tar", "train-1.tar", "val-0.tar", "val-1.tar"}));
  EXPECT_EQ(expand_braces("plain.tar"), (Names{"plain.tar"}));
  EXPECT_TRUE(is_brace_pattern("a{1..2}"));
  EXPECT_FALSE(is_brace_pattern("a.tar"));
}

TEST(BracePattern, Errors) {
  for (const std::string pattern :
       {"s{1..2.tar", "s}1", "s{a..3}", "s{5..3}", "s{{1..2}}", "s{0..99999999}"}) {
    try {
      expand_braces(pattern);
      ADD_FAILURE() << pattern << " did not throw";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find(pattern), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace kiln
