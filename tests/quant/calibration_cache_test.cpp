// Reading a calibration cache: every malformed file ends in one kiln::Error naming the file, never in
// an exception of the JSON library.
#include "quant/calibration_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"

namespace kiln {
namespace {

class CalibrationCache : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }

  std::map<std::string, float> read(const std::string& text) { return read_all(text).tensors; }
  ActivationScales read_all(const std::string& text, QuantFormat grid = QuantFormat::kE4M3) {
    std::ofstream(path_) << text;
    return read_calibration_cache(path_, grid);
  }

  // The error for `text`, checked to name the file and to be one line.
  std::string error_for(const std::string& text, QuantFormat grid = QuantFormat::kE4M3) {
    try {
      read_all(text, grid);
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_TRUE(message.starts_with(path_.string() + ": ")) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      return message;
    }
    ADD_FAILURE() << "no error for " << text;
    return "";
  }

  std::filesystem::path path_ = std::filesystem::temp_directory_path() /
                                ("kiln_calibration_cache_" + std::to_string(getpid()) + ".json");
};

TEST_F(CalibrationCache, ReadsScales) {
  const auto scales = read(R"({"format": "kiln-fp8-calibration", "scales": {"conv1": 0.5, "fc": 2}})");
  ASSERT_EQ(scales.size(), 2u);
  EXPECT_EQ(scales.at("conv1"), 0.5f);
  EXPECT_EQ(scales.at("fc"), 2.0f);
}

TEST_F(CalibrationCache, FormatOfAnotherTypeIsRefused) {
  for (const char* format : {"{}", "[]", "7", "null", "true"}) {
    const std::string message = error_for(std::string(R"({"format": )") + format + R"(, "scales": {}})");
    EXPECT_NE(message.find("expected a calibration cache with \"format\""), std::string::npos) << message;
  }
  EXPECT_NE(error_for("[1]").find("expected a calibration cache"), std::string::npos);
}

TEST_F(CalibrationCache, MalformedScales) {
  const std::string head = R"({"format": "kiln-fp8-calibration", )";
  EXPECT_NE(error_for(head + R"("scales": [1]})").find("key 'scales' must be an object"), std::string::npos);
  EXPECT_NE(error_for(head + R"("scales": {"a": "x"}})").find("scales.a must be a number"),
            std::string::npos);
  EXPECT_NE(error_for(head + R"("scales": {"a": 1e300}})").find("expected a positive finite scale"),
            std::string::npos);
  EXPECT_NE(error_for(head + R"("scales": {"a": 1e328}})").find("invalid JSON: number overflow"),
            std::string::npos);
  EXPECT_NE(error_for("{").find("invalid JSON (byte"), std::string::npos);
}

// int8 tensors quantized per channel (depthwise inputs) keep one scale per channel.
TEST_F(CalibrationCache, ReadsChannelScales) {
  const ActivationScales scales = read_all(
      R"({"format": "kiln-fp8-calibration", "grid": "int8", "scales": {"a": 0.5},
          "channel_scales": {"b": [0.25, 0.125, 2]}})",
      QuantFormat::kInt8);
  EXPECT_EQ(scales.tensors, (std::map<std::string, float>{{"a", 0.5f}}));
  ASSERT_EQ(scales.channels.size(), 1u);
  EXPECT_EQ(scales.channels.at("b"), (std::vector<float>{0.25f, 0.125f, 2.0f}));
}

TEST_F(CalibrationCache, MalformedChannelScales) {
  const std::string head = R"({"format": "kiln-fp8-calibration", "grid": "int8", "scales": {"a": 1}, )";
  const auto error = [&](const std::string& rest) { return error_for(head + rest, QuantFormat::kInt8); };
  EXPECT_NE(error(R"("channel_scales": [1]})").find("key 'channel_scales' must be an object"),
            std::string::npos);
  EXPECT_NE(
      error(R"("channel_scales": {"b": 0.5}})").find("channel_scales.b must be a non-empty list of scales"),
      std::string::npos);
  EXPECT_NE(error(R"("channel_scales": {"b": []}})").find("channel_scales.b must be a non-empty list"),
            std::string::npos);
  EXPECT_NE(
      error(R"("channel_scales": {"b": [0.5, 0]}})").find("channel_scales.b[1] = 0; expected a positive"),
      std::string::npos);
  EXPECT_NE(error(R"("channel_scales": {"b": [0.5, "x"]}})").find("channel_scales.b[1] must be a number"),
            std::string::npos);
  EXPECT_NE(
      error(R"("channel_scales": {"a": [0.5]}})").find("'a' has both one scale (scales) and one per channel"),
      std::string::npos);
  EXPECT_NE(error_for(R"({"format": "kiln-fp8-calibration", "grid": "fp8-e4m3", "scales": {},
                          "channel_scales": {"b": [1]}})")
                .find("channel_scales in an fp8-e4m3 cache"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
