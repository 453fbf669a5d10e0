// Text kiln writes is valid UTF-8 (invalid bytes become U+FFFD), and JSON kiln reads is nested no deeper
// than kMaxJsonDepth.
#include "io/utf8_text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "io/user_json.h"

namespace kiln {
namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

TEST(Utf8Text, InvalidBytesBecomeTheReplacementCharacter) {
  EXPECT_EQ(valid_utf8("caf\xC3\xA9.jpg"), "caf\xC3\xA9.jpg");                        // valid: unchanged
  EXPECT_EQ(valid_utf8("caf\xE9.jpg"), "caf" + kReplacement + ".jpg");                // Latin-1 e-acute
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kReplacement + kReplacement);                     // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kReplacement + kReplacement + kReplacement);  // a surrogate
  EXPECT_EQ(valid_utf8("end\xF0\x9F"), "end" + kReplacement + kReplacement);          // cut short
  EXPECT_EQ(find_invalid_utf8("ok\xFFno"), 2u);
  EXPECT_EQ(find_invalid_utf8("\xF0\x9F\x90\x88"), std::string::npos);
}

TEST(Utf8Text, JsonWithAFileNameThatIsNotUtf8IsWrittenNotRefused) {
  nlohmann::json report = {{"input", "photos/caf\xE9.jpg"}, {"caf\xE9", 1}};
  EXPECT_THROW(report.dump(), nlohmann::json::type_error);  // what the writers used to call
  const std::string text = json_text(report);
  EXPECT_EQ(find_invalid_utf8(text), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(text)["input"], "photos/caf" + kReplacement + ".jpg");
  EXPECT_EQ(text.back(), '\n');
}

TEST(UserJson, NestingIsBoundedWithAMessageNamingTheFile) {
  const auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_NO_THROW(parse_user_json(nested(kMaxJsonDepth), "config.json"));
  try {
    parse_user_json(nested(150'000), "config.json");
    FAIL() << "a 150,000-deep array was accepted";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "config.json: JSON nests more than 64 levels deep");
  }
  EXPECT_NO_THROW(parse_user_json(R"({"a": )" + nested(kMaxJsonDepth - 1) + "}", "c.json"));
  EXPECT_THROW(parse_user_json(R"({"a": )" + nested(kMaxJsonDepth) + "}", "c.json"), Error);
  EXPECT_THROW(parse_user_json(nested(kMaxJsonDepth + 1), "c.json"), Error);
}

}  // namespace
}  // namespace kiln
