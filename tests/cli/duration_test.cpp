// Duration options: units read exactly, bare numbers as seconds with a notice, bounds named with units.
#include "cli/duration.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace kiln::cli {
namespace {

TEST(Duration, ReadsUnits) {
  EXPECT_DOUBLE_EQ(parse_duration("200ms")->seconds, 0.2);
  EXPECT_DOUBLE_EQ(parse_duration("2s")->seconds, 2.0);
  EXPECT_DOUBLE_EQ(parse_duration("1.5s")->seconds, 1.5);
  EXPECT_DOUBLE_EQ(parse_duration("1.5min")->seconds, 90.0);
  EXPECT_FALSE(parse_duration("2s")->bare);
  EXPECT_TRUE(parse_duration("200")->bare);
  EXPECT_DOUBLE_EQ(parse_duration("200")->seconds, 200.0);
}

TEST(Duration, RejectsWhatIsNoDuration) {
  for (const char* text : {"", "ms", "s", "-1s", "2h", "2 s", "1e400s", "abc", "+2s", "2sms"})
    EXPECT_FALSE(parse_duration(text).has_value()) << text;
}

TEST(Duration, WritesSecondsWithUnits) {
  EXPECT_EQ(duration_text(0.2), "200ms");
  EXPECT_EQ(duration_text(2.0), "2s");
  EXPECT_EQ(duration_text(0.0), "0s");
  EXPECT_EQ(duration_text(3600.0), "60min");
}

double parse_option(const std::vector<std::string>& arguments, std::ostream& notices) {
  CLI::App app;
  double seconds = 1.0;
  add_duration_option(app, "--warmup", seconds, "Untimed runs first", 0.0, 60.0, notices);
  std::vector<std::string> argv = arguments;
  std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
  app.parse(argv);
  return seconds;
}

TEST(Duration, OptionWarnsForBareNumbersAndChecksBounds) {
  std::ostringstream notices;
  EXPECT_DOUBLE_EQ(parse_option({"--warmup", "200ms"}, notices), 0.2);
  EXPECT_TRUE(notices.str().empty()) << notices.str();
  EXPECT_DOUBLE_EQ(parse_option({"--warmup", "2"}, notices), 2.0);
  EXPECT_NE(notices.str().find("--warmup 2 without a unit is read as seconds"), std::string::npos)
      << notices.str();
  const std::string lines = notices.str();
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1);
  try {
    parse_option({"--warmup", "2min"}, notices);
    FAIL() << "2min is over the 60s bound";
  } catch (const CLI::ValidationError& error) {
    EXPECT_STREQ(error.what(), "--warmup must be between 0s and 1min, got 2min");
  }
  EXPECT_THROW(parse_option({"--warmup", "soon"}, notices), CLI::ValidationError);
}

}  // namespace
}  // namespace kiln::cli
