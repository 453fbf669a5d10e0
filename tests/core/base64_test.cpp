// Base64 against RFC 4648's test vectors, round trips of every byte value, and malformed text refused.
#include "core/base64.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    EXPECT_EQ(base64_decode(encoded), std::string(plain));
  }
}

TEST(Base64, RoundTripsEveryByte) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t length = 0; length <= bytes.size(); length += 17) {
    const std::string part = bytes.substr(0, length);
    EXPECT_EQ(base64_decode(base64_encode(part)), part) << length;
  }
}

TEST(Base64, RefusesMalformedText) {
  for (const char* bad : {"Zg=", "Zg", "Z===", "Zm9v Yg==", "Zm=v", "=Zm9", "Zg==Zg==", "Zm9*"})
    EXPECT_FALSE(base64_decode(bad).has_value()) << bad;
}

}  // namespace
}  // namespace kiln
