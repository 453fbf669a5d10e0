// The shared option checks: bounds as a person reads them, ignored options named, aliases that warn.
#include "cli/option_checks.h"

#include <gtest/gtest.h>

namespace kiln::cli {
namespace {

std::string check(const CLI::Validator& validator, std::string text) { return validator(text); }

TEST(OptionChecks, WholeBoundsPrintTheValueAsGiven) {
  const CLI::Validator batch = whole_between(1, kMaxBatch);
  EXPECT_EQ(check(batch, "0"), "must be between 1 and 4096, got 0");
  EXPECT_EQ(check(batch, "100000"), "must be between 1 and 4096, got 100000");
  EXPECT_EQ(check(batch, "99999999999999999999999"),
            "must be between 1 and 4096, got 99999999999999999999999");
  EXPECT_EQ(check(batch, "1.5"), "expected a whole number between 1 and 4096, got '1.5'");
  EXPECT_EQ(check(batch, "8"), "");
  EXPECT_EQ(check(whole_between(0, kMaxThreads), "-3"), "must be between 0 and 1024, got -3");
}

TEST(OptionChecks, RealBoundsPrintTheValueAsGiven) {
  const CLI::Validator score = real_between(0.0, 1.0);
  EXPECT_EQ(check(score, "0.25"), "");
  EXPECT_EQ(check(score, "1.25"), "must be between 0 and 1, got 1.25");
  EXPECT_EQ(check(score, "nan"), "expected a number between 0 and 1, got 'nan'");
  EXPECT_EQ(number_text(0.25), "0.25");
}

struct Parsed {
  CLI::App app;
  int images = 0;
  bool flag = false;
  CLI::Option* option = nullptr;
  Parsed() {
    option = app.add_option("--images", images);
    add_warning_alias(app, option, "--calib-images");
    app.add_flag("--flag", flag);
  }
  void parse(std::vector<std::string> argv) {
    std::reverse(argv.begin(), argv.end());
    app.parse(argv);
  }
};

TEST(OptionChecks, AliasSetsTheOptionItNames) {
  Parsed parsed;
  testing::internal::CaptureStderr();
  parsed.parse({"--calib-images", "7"});
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_EQ(parsed.images, 7);
  EXPECT_EQ(first_given(parsed.app, {"--images"}), "--images");
  EXPECT_NE(warning.find("--calib-images is an old name of --images"), std::string::npos) << warning;
}

TEST(OptionChecks, AnIgnoredOptionIsAUsageErrorNamingBoth) {
  Parsed parsed;
  parsed.parse({"--images", "3"});
  EXPECT_NO_THROW(refuse_unless(true, parsed.app, {"--images"}, "to fp8", "--precision fp16 was given"));
  EXPECT_NO_THROW(refuse_unless(false, parsed.app, {"--flag"}, "to fp8", "--precision fp16 was given"));
  try {
    refuse_unless(false, parsed.app, {"--flag", "--images"}, "to --precision fp8",
                  "--precision fp16 was given");
    FAIL() << "--images was given";
  } catch (const CLI::ValidationError& error) {
    EXPECT_STREQ(error.what(), "--images applies only to --precision fp8, but --precision fp16 was given");
    EXPECT_EQ(error.get_exit_code(), static_cast<int>(CLI::ExitCodes::ValidationError));
  }
}

}  // namespace
}  // namespace kiln::cli
