#include "core/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace {

std::string digest_of(const std::string& text) { return sha256_hex(std::as_bytes(std::span(text.data(), text.size()))); }

// Test vectors from FIPS 180-4's examples (NIST CSRC "SHA256.pdf").
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(digest_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(digest_of(std::string(1'000'000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  const std::string text(1000, 'x');
  Sha256 hash;
  for (std::size_t i = 0; i < text.size(); i += 37) {
    const auto part = std::string_view(text).substr(i, 37);
    hash.update(std::as_bytes(std::span(part.data(), part.size())));
  }
  const auto digest = hash.finish();
  EXPECT_EQ(to_hex(digest), digest_of(text));
}

}  // namespace
}  // namespace kiln
