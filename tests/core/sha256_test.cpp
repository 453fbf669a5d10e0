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

// update() takes whole blocks straight from its input and buffers the rest; any split of the input
// must give the one-shot digest.
TEST(Sha256, AnySplitEqualsOneShot) {
  std::string text(300, '\0');
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>(i * 7 + 3);
  for (const std::size_t length : {0u, 1u, 55u, 56u, 63u, 64u, 65u, 128u, 191u, 300u}) {
    const std::string_view whole = std::string_view(text).substr(0, length);
    const std::string expected = digest_of(std::string(whole));
    for (const std::size_t first : {0u, 1u, 31u, 63u, 64u, 65u, 130u}) {
      for (const std::size_t second : {0u, 1u, 64u, 100u}) {
        if (first + second > length) continue;
        Sha256 hash;
        for (const auto part :
             {whole.substr(0, first), whole.substr(first, second), whole.substr(first + second)}) {
          hash.update(std::as_bytes(std::span(part.data(), part.size())));
        }
        const auto digest = hash.finish();
        EXPECT_EQ(to_hex(digest), expected) << length << " split at " << first << " and " << first + second;
      }
    }
  }
}

}  // namespace
}  // namespace kiln
