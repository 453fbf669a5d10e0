// A valid manifest to derive broken ones from, and helpers to check the one-line errors they give.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/error.h"
#include "manifest/manifest.h"

namespace kiln::testing {

inline constexpr std::string_view kTestPath = "families/test/manifest.toml";

inline const std::vector<std::string>& known_families() {
  static const std::vector<std::string> kKnown = {"timm_resnest", "timm_resnet"};
  return kKnown;
}

inline constexpr std::string_view kValidManifest = R"([model]
family = "timm_resnest"
hub_id = "timm/resnest50d.in1k"
revision = "2239b0d822126dee3bc7a5357514de35b8f42092"
checkpoint_sha256 = ""
task = "classification"

[input]
size = 224
batch = [1, 32]

[build]
precision = "fp16"
opt_level = 3
backends = ["cpu", "cuda"]

[quantization]
weights = "per-channel"
activations = "per-tensor"
calibration = "max"
calibration_images = 500
recipe = "all"
)";

// `text` with its one occurrence of `from` replaced by `to`.
inline std::string replaced(std::string text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "the manifest has no '" << from << "'";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "'" << from << "' is not unique";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// kValidManifest with `from` replaced by `to`.
inline std::string with(std::string_view from, std::string_view to) {
  return replaced(std::string(kValidManifest), from, to);
}

inline Manifest parse_and_validate(std::string_view text) {
  Manifest manifest = parse_manifest(text, std::string(kTestPath));
  validate_manifest(manifest, known_families());
  return manifest;
}

// The message parse_and_validate fails with; "" (and a test failure) when it does not fail.
inline std::string error_of(std::string_view text) {
  try {
    parse_and_validate(text);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

// Checks that `message` is one line that starts with the file and names the dotted key.
inline ::testing::AssertionResult names_key(const std::string& message, std::string_view key) {
  const std::string prefix = std::string(kTestPath) + ": key '" + std::string(key) + "': ";
  if (message.rfind(prefix, 0) != 0) {
    return ::testing::AssertionFailure() << "'" << message << "' does not start with '" << prefix << "'";
  }
  if (message.find('\n') != std::string::npos)
    return ::testing::AssertionFailure() << "not one line: " << message;
  return ::testing::AssertionSuccess();
}

inline bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

}  // namespace kiln::testing
