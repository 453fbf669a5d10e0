// Damaged or hand-edited plan files: each gives one kiln::Error that names the file and says what is
// wrong, and none crashes the reader.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "plan/plan_format.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"
#include "plan_test_util.h"

namespace kiln {
namespace {

using plan_test::TempDir;

class PlanCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    write_plan(good_path(), plan_test::every_op_plan());
    good_ = plan_test::read_bytes(good_path());
    header_ = plan_test::header_of(good_);
    blob_offset_ = plan_test::blob_offset_of(good_);
  }

  std::filesystem::path good_path() const { return dir_ / "good.kplan"; }

  // The reader's error for these bytes, or "" when they load.
  std::string error_for(const std::vector<std::byte>& bytes) const {
    const auto path = dir_ / "damaged.kplan";
    plan_test::write_bytes(path, bytes);
    try {
      read_plan(path);
    } catch (const Error& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u)
          << "the message must start with the file: " << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
      return message;
    }
    return "";
  }

  void expect_error(const std::vector<std::byte>& bytes, const std::string& expected) const {
    const std::string message = error_for(bytes);
    EXPECT_NE(message.find(expected), std::string::npos)
        << "expected an error containing \"" << expected << "\", got \"" << message << "\"";
  }

  std::vector<std::byte> edited(const std::function<void(nlohmann::json&)>& edit) const {
    return plan_test::with_header(good_, edit);
  }

  // Index of a layer in the header's layer table.
  std::size_t layer_index(const std::string& name) const {
    const nlohmann::json& layers = header_["graph"]["layers"];
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (layers[i]["name"] == name) return i;
    }
    ADD_FAILURE() << "no layer " << name;
    return 0;
  }

  TempDir dir_;
  std::vector<std::byte> good_;
  nlohmann::json header_;
  std::size_t blob_offset_ = 0;
};

TEST_F(PlanCorruption, TheUndamagedFileLoads) { EXPECT_EQ(error_for(good_), ""); }

TEST_F(PlanCorruption, MissingFileOrFolder) {
  EXPECT_THROW(read_plan(dir_ / "absent.kplan"), Error);
  EXPECT_THROW(read_plan(dir_.path()), Error);
}

TEST_F(PlanCorruption, EmptyFile) { expect_error({}, "empty file, not a kiln plan"); }

TEST_F(PlanCorruption, WrongMagic) {
  std::vector<std::byte> bytes = good_;
  bytes[0] = std::byte{'k'};
  expect_error(bytes, "not a kiln plan");
  const std::string text = "{\"this is\": \"a JSON file, not a plan\"}";
  std::vector<std::byte> json_file;
  for (const char c : text) json_file.push_back(static_cast<std::byte>(c));
  expect_error(json_file, "not a kiln plan");
}

TEST_F(PlanCorruption, NewerFormatVersion) {
  std::vector<std::byte> bytes = good_;
  bytes[8] = static_cast<std::byte>(kPlanFormatVersion + 1);
  expect_error(bytes, "made by a newer kiln: format 2, this kiln reads up to 1");
  bytes[8] = std::byte{0};
  bytes[11] = std::byte{0x80};
  expect_error(bytes, "made by a newer kiln: format 2147483648, this kiln reads up to 1");
  bytes[11] = std::byte{0};
  expect_error(bytes, "format version 0 does not exist");
}

TEST_F(PlanCorruption, UnknownFlags) {
  std::vector<std::byte> bytes = good_;
  bytes[12] = std::byte{0x04};
  expect_error(bytes, "made by a newer kiln: it sets flags 0x4 this kiln does not know");
}

TEST_F(PlanCorruption, HeaderLengthBeyondTheFile) {
  std::vector<std::byte> bytes = good_;
  bytes[20] = std::byte{0x01};  // adds 2^32 to the header length
  expect_error(bytes, "truncated: the 4294");
  for (std::size_t i = 16; i < 24; ++i) bytes[i] = std::byte{0xFF};
  expect_error(bytes, "-byte header runs past the end of the ");
}

TEST_F(PlanCorruption, FlippedByteInTheHeader) {
  std::vector<std::byte> bytes = good_;
  bytes[24 + 100] ^= std::byte{0x20};
  expect_error(bytes, "checksum mismatch: the file is corrupt or truncated");
}

TEST_F(PlanCorruption, FlippedByteInTheBlob) {
  std::vector<std::byte> bytes = good_;
  bytes[blob_offset_ + 5] ^= std::byte{0x01};
  expect_error(bytes, "checksum mismatch: the file is corrupt or truncated");
  bytes = good_;
  bytes[bytes.size() - plan_format::kTrailerSize - 1] ^= std::byte{0x80};
  expect_error(bytes, "checksum mismatch");
}

TEST_F(PlanCorruption, FlippedByteInTheTrailer) {
  std::vector<std::byte> bytes = good_;
  bytes[bytes.size() - plan_format::kTrailerSize] ^= std::byte{0x01};  // the digest
  expect_error(bytes, "checksum mismatch: the file is corrupt or truncated");
  bytes = good_;
  bytes[bytes.size() - 1] ^= std::byte{0x01};  // the end marker
  expect_error(bytes, "truncated or corrupt: the end marker \"KPLANEND\" is missing");
}

TEST_F(PlanCorruption, TruncatedAtSeveralLengths) {
  const std::size_t size = good_.size();
  const std::vector<std::pair<std::size_t, std::string>> cases = {
      {3, "truncated: the file ends inside its 24-byte preamble"},
      {8, "truncated: the file ends inside its 24-byte preamble"},
      {23, "truncated: the file ends inside its 24-byte preamble"},
      {24, "-byte header runs past the end of the 24-byte file"},
      {24 + 50, "-byte header runs past the end of the 74-byte file"},
      {blob_offset_ - 1, "truncated"},
      {blob_offset_ + 20, "truncated"},
      {blob_offset_ + 1000, "truncated or corrupt: the end marker"},
      {size - plan_format::kTrailerSize, "truncated or corrupt: the end marker"},
      {size - 1, "truncated or corrupt: the end marker"},
  };
  for (const auto& [length, expected] : cases) {
    SCOPED_TRACE("truncated to " + std::to_string(length) + " of " + std::to_string(size) + " bytes");
    expect_error(std::vector<std::byte>(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(length)),
                 expected);
  }
}

TEST_F(PlanCorruption, EveryTruncationFails) {
  for (std::size_t length = 0; length < good_.size(); length += length < blob_offset_ + 256 ? 1 : 61) {
    const std::string message =
        error_for(std::vector<std::byte>(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(length)));
    EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                message.find("empty file") != std::string::npos)
        << "length " << length << ": " << message;
  }
}

TEST_F(PlanCorruption, EveryFlippedByteFails) {
  for (std::size_t i = 0; i < good_.size(); i += i < blob_offset_ ? 1 : 29) {
    std::vector<std::byte> bytes = good_;
    bytes[i] ^= std::byte{0x10};
    EXPECT_NE(error_for(bytes), "") << "flipping byte " << i << " went unnoticed";
  }
}

TEST_F(PlanCorruption, SkippingTheChecksum) {
  const auto path = dir_ / "damaged.kplan";
  std::vector<std::byte> bytes = good_;
  bytes[blob_offset_] ^= std::byte{0x01};  // the first byte of conv1.weight
  plan_test::write_bytes(path, bytes);
  EXPECT_THROW(read_plan(path), Error);
  const Plan loaded = read_plan(path, {.verify_checksum = false});
  const Tensor& weight =
      loaded.graph.value(loaded.graph.node(*loaded.graph.find_node("conv1")).inputs[1]).constant;
  EXPECT_EQ(weight.bytes()[0], good_[blob_offset_] ^ std::byte{0x01});

  // Everything but the weights is still checked, and damage there never crashes the reader.
  for (std::size_t i = 0; i < blob_offset_; ++i) {
    bytes = good_;
    bytes[i] ^= std::byte{0x02};
    plan_test::write_bytes(path, bytes);
    try {
      read_plan(path, {.verify_checksum = false});
    } catch (const Error&) {
    }
  }
}

// From here on the header is edited and the checksum made valid again, as a buggy or hostile writer
// would: the reader must still refuse with a precise message.

TEST_F(PlanCorruption, MalformedJson) {
  const std::string text = header_.dump();
  expect_error(plan_test::with_header(good_, text.substr(0, text.size() / 2)),
               "the header is not valid JSON");
  expect_error(plan_test::with_header(good_, ""), "the header is not valid JSON");
  expect_error(plan_test::with_header(good_, "{\"build\": \"\xff\"}"), "the header is not valid JSON");
  expect_error(plan_test::with_header(good_, "[1, 2]"), "header: expected a JSON object");
}

// The reader copies free-form sections (the quantization report, a layer's backend data) recursively,
// one stack frame per level: nesting far beyond what kiln writes is refused before that.
TEST_F(PlanCorruption, DeeplyNestedJsonIsRefusedNotACrash) {
  constexpr std::size_t kDepth = 150'000;  // overflowed the stack when copied
  nlohmann::json header = header_;
  header["quantization"] = {{"nested", "DEEP"}};
  std::string text = header.dump();
  text.replace(text.find("\"DEEP\""), 6, std::string(kDepth, '[') + std::string(kDepth, ']'));
  expect_error(plan_test::with_header(good_, text), "JSON nests more than 64 levels deep");
  // kiln's own nesting is far below the bound.
  header["quantization"] = {{"nested", nlohmann::json::parse(std::string(60, '[') + std::string(60, ']'))}};
  EXPECT_EQ(error_for(plan_test::with_header(good_, header.dump())), "");
}

TEST_F(PlanCorruption, MissingSection) {
  expect_error(edited([](nlohmann::json& h) { h.erase("build"); }), "header key 'build': missing");
  expect_error(edited([](nlohmann::json& h) { h["bundle"]["config"].erase("preprocess"); }),
               "header key 'bundle.config.preprocess': missing");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"] = 3; }),
               "header key 'graph.values': expected an array");
}

// The backend's options are names to string values; which names and values it takes is the backend's to
// say when it compiles the plan.
TEST_F(PlanCorruption, BackendOptionsAreStrings) {
  expect_error(edited([](nlohmann::json& h) { h["build"]["backend_options"] = "fp8-gemm=off"; }),
               "header key 'build.backend_options': expected an object of option names to values");
  expect_error(edited([](nlohmann::json& h) { h["build"]["backend_options"]["fp8-gemm"] = 0; }),
               "header key 'build.backend_options.fp8-gemm': expected a string");
}

TEST_F(PlanCorruption, UnknownOperator) {
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][1]["op"] = "conv3d"; }),
               "header key 'graph.layers[1].op': unknown operator 'conv3d' (made by a newer kiln?)");
}

TEST_F(PlanCorruption, AttributeFieldMissing) {
  expect_error(
      edited([](nlohmann::json& h) { h["graph"]["layers"][0]["attributes"]["conv"].erase("groups"); }),
      "header key 'graph.layers[0].attributes.conv.groups': missing");
  const std::size_t pool = layer_index("maxpool");
  expect_error(edited([&](nlohmann::json& h) {
                 h["graph"]["layers"][pool]["attributes"]["pool"].erase("count_include_pad");
               }),
               ".attributes.pool.count_include_pad': missing");
  const std::size_t bn = layer_index("bn1");
  expect_error(
      edited([&](nlohmann::json& h) { h["graph"]["layers"][bn]["attributes"] = nlohmann::json::object(); }),
      "attributes do not belong to a batch_norm node");
}

TEST_F(PlanCorruption, AttributeFieldOfWrongType) {
  const auto attrs = [](nlohmann::json& h, std::size_t layer) -> nlohmann::json& {
    return h["graph"]["layers"][layer]["attributes"];
  };
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["conv"]["kernel"] = "3x3"; }),
               "attributes.conv.kernel': expected an array of 2");
  expect_error(edited([&](nlohmann::json& h) {
                 attrs(h, 0)["conv"]["padding"] = {1, 1};
               }),
               "attributes.conv.padding': expected an array of 4, got 2");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["conv"]["groups"] = 2.5; }),
               "attributes.conv.groups': expected an integer in [1, 2147483647]");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["conv"]["stride"][1] = 0; }),
               "attributes.conv.stride[1]': expected an integer in [1, 2147483647], got 0");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["conv"]["padding"][3] = -1; }),
               "attributes.conv.padding[3]': expected an integer in [0, 2147483647], got -1");
  const std::size_t softmax = layer_index("attn.rsoftmax");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, softmax)["radix"]["radix"] = 0; }),
               "attributes.radix.radix': expected an integer in [1, 2147483647], got 0");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["conv"]["activation"] = "gelu"; }),
               "attributes.conv.activation': unknown activation 'gelu'");
  const std::size_t bn = layer_index("bn1");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, bn)["batch_norm"]["epsilon"] = "small"; }),
               "attributes.batch_norm.epsilon': expected a number");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, bn)["batch_norm"]["epsilon"] = 1e300; }),
               "attributes.batch_norm.epsilon': expected a float");
  const std::size_t pool = layer_index("avgpool");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, pool)["pool"]["ceil_mode"] = 1; }),
               "attributes.pool.ceil_mode': expected true or false");
  expect_error(edited([&](nlohmann::json& h) {
                 attrs(h, 0) = {{"convolution", attrs(h, 0)["conv"]}};
               }),
               "unknown attribute struct 'convolution'");
  expect_error(edited([&](nlohmann::json& h) { attrs(h, 0)["pool"] = attrs(h, pool)["pool"]; }),
               "attributes': expected one attribute struct");
  expect_error(edited([&](nlohmann::json& h) {
                 attrs(h, 0) = {{"pool", attrs(h, pool)["pool"]}};
               }),
               "attributes do not belong to a conv2d node");
}

TEST_F(PlanCorruption, UnknownKeysAreIgnored) {
  // A later version of the same format may add keys; this reader skips them.
  const auto bytes = edited([](nlohmann::json& h) {
    h["graph"]["layers"][0]["attributes"]["conv"]["future_field"] = 1;
    h["graph"]["layers"][0]["future_layer_key"] = {1, 2};
    h["build"]["future_setting"] = "x";
    h["future_section"] = nlohmann::json::object();
  });
  EXPECT_EQ(error_for(bytes), "");
}

TEST_F(PlanCorruption, ValueIdsOutOfRange) {
  const std::string last = std::to_string(header_["graph"]["values"].size() - 1);
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][0]["inputs"][0] = 9999; }),
               "graph.layers[0].inputs[0]': expected an integer in [0, " + last + "], got 9999");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][0]["output"] = -1; }),
               "graph.layers[0].output': expected an integer in [0, " + last + "], got -1");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["outputs"][1] = 1u << 31; }),
               "graph.outputs[1]': expected an integer in [0, " + last + "]");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["inputs"][0] = "0"; }),
               "graph.inputs[0]': expected an integer");
}

TEST_F(PlanCorruption, InconsistentValueTable) {
  expect_error(edited([](nlohmann::json& h) { h["graph"]["inputs"][0] = 1; }), "is a constant, not an input");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["inputs"].push_back(0); }),
               "value 0 is listed twice");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][0]["output"] = 1; }),
               "value 1 is already an input, a constant or another layer's output");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"].push_back(h["graph"]["values"][0]); }),
               "not an input, a constant or a layer's output");
  expect_error(edited([](nlohmann::json& h) { std::swap(h["graph"]["layers"][0], h["graph"]["layers"][1]); }),
               "reads value");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][1]["name"] = "conv1"; }),
               "two layers are named 'conv1'");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"][0]["dtype"] = "F12"; }),
               "graph.values[0].dtype': unknown dtype 'F12'");
  expect_error(edited([](nlohmann::json& h) {
                 h["graph"]["values"][0]["shape"] = {-2, 4, 9, 9};
               }),
               "graph.values[0].shape[0]': expected an integer in [-1, 2147483647], got -2");
  expect_error(edited([](nlohmann::json& h) {
                 h["graph"]["values"][0]["shape"] = {1 << 30, 1 << 30, 1 << 30};
               }),
               "graph.values[0].shape': expected a shape of at most 2^48 elements");
}

// 2^24 * 2^24 is exactly the limit; multiplying on by 2^31 - 1 would overflow int64 (and wrap to a
// negative count that passes the check) unless the bound is checked before the product.
TEST_F(PlanCorruption, ShapeWhoseElementCountOverflowsInt64) {
  expect_error(edited([](nlohmann::json& h) {
                 h["graph"]["values"][0]["shape"] = {16777216, 16777216, 2147483647, 4};
               }),
               "graph.values[0].shape': expected a shape of at most 2^48 elements");
}

TEST_F(PlanCorruption, ConstantSizeDisagreesWithShapeAndDtype) {
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"][1]["data"]["size"] = 100; }),
               "constant 'conv1.weight' (f32 [12, 2, 3, 3]) needs 864 bytes, not 100");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"][1]["dtype"] = "F16"; }),
               "constant 'conv1.weight' (f16 [12, 2, 3, 3]) needs 432 bytes, not 864");
  expect_error(edited([](nlohmann::json& h) {
                 h["graph"]["values"][1]["shape"] = {12, 2, 3, -1};
               }),
               "constant 'conv1.weight' has an unknown extent");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["values"][1]["data"]["offset"] = 32; }),
               "graph.values[1].data.offset': expected a multiple of 64");
}

TEST_F(PlanCorruption, ConstantBeyondTheBlob) {
  const auto blob_size = header_["blob"]["size"].get<std::uint64_t>();
  const std::uint64_t past_the_end = plan_format::align_up(blob_size);
  expect_error(edited([&](nlohmann::json& h) { h["graph"]["values"][2]["data"]["offset"] = past_the_end; }),
               "lies outside the " + std::to_string(blob_size) + "-byte weight blob");
  expect_error(edited([&](nlohmann::json& h) { h["graph"]["values"][2]["data"]["offset"] = 1ull << 62; }),
               "lies outside the");
  expect_error(edited([&](nlohmann::json& h) { h["blob"]["size"] = blob_size + 64; }),
               "the header expects a " + std::to_string(blob_size + 64) +
                   "-byte weight blob, the file holds " + std::to_string(blob_size) + " bytes");
  expect_error(edited([&](nlohmann::json& h) { h["blob"]["alignment"] = 32; }),
               "header key 'blob.alignment': expected 64");
}

TEST_F(PlanCorruption, GraphThatFailsVerification) {
  const std::size_t fc = layer_index("fc");
  expect_error(edited([&](nlohmann::json& h) {
                 const auto output = h["graph"]["layers"][fc]["output"].get<std::size_t>();
                 h["graph"]["values"][output]["shape"] = {-1, 6};
               }),
               "layer 'fc': output shape [-1, 6] disagrees with inferred [-1, 5]");
  expect_error(edited([&](nlohmann::json& h) { h["graph"]["layers"][fc]["inputs"].erase(1); }),
               "layer 'fc' (linear):");
  expect_error(edited([&](nlohmann::json& h) { h["graph"]["layers"][0]["inputs"][1] = 0; }),
               "layer 'conv1' (conv2d): ");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["outputs"] = nlohmann::json::array(); }),
               "graph has no outputs");
}

TEST_F(PlanCorruption, BadBuildAndBundleFields) {
  expect_error(edited([](nlohmann::json& h) { h["build"]["precision"] = "int4"; }),
               "header key 'build.precision': unknown precision 'int4'");
  expect_error(edited([](nlohmann::json& h) { h["graph"]["layers"][0]["precision"] = 16; }),
               "header key 'graph.layers[0].precision': expected a string");
  expect_error(edited([](nlohmann::json& h) { h["bundle"]["checkpoint"]["sha256"] = "xyz"; }),
               "header key 'bundle.checkpoint.sha256': expected 64 lower-case hex digits");
  expect_error(
      edited([](nlohmann::json& h) { h["bundle"]["config"]["preprocess"]["interpolation"] = "lanczos"; }),
      "unknown interpolation 'lanczos'");
  expect_error(edited([](nlohmann::json& h) {
                 h["bundle"]["config"]["preprocess"]["mean"] = {0.5, 0.5};
               }),
               "header key 'bundle.config.preprocess.mean': expected an array of 3, got 2");
  expect_error(edited([](nlohmann::json& h) { h["bundle"]["config"]["label_names"][1] = 7; }),
               "header key 'bundle.config.label_names[1]': expected a string");
  expect_error(edited([](nlohmann::json& h) { h["quantization"] = "fp8"; }),
               "header key 'quantization': expected an object");
}

// Replacing any single header entry by a value of another type or range must give a kiln::Error (or,
// where the change is harmless, a plan); never another exception, a crash or undefined behaviour.
TEST_F(PlanCorruption, EveryHeaderEntryReplacedFailsCleanly) {
  const nlohmann::json flat = header_.flatten();
  const std::vector<nlohmann::json> replacements = {
      nullptr, -1, 0, std::int64_t{1} << 40, 1.5, "x", nlohmann::json::array(), nlohmann::json::object(),
      true,
  };
  std::size_t refused = 0;
  for (const auto& [pointer, original] : flat.items()) {
    for (const nlohmann::json& replacement : replacements) {
      if (replacement == original) continue;
      nlohmann::json changed = header_;
      changed[nlohmann::json::json_pointer(pointer)] = replacement;
      const auto bytes = plan_test::with_header(good_, changed.dump());
      const auto path = dir_ / "mutated.kplan";
      plan_test::write_bytes(path, bytes);
      try {
        read_plan(path);
      } catch (const Error&) {
        ++refused;
      } catch (const std::exception& error) {
        ADD_FAILURE() << pointer << " = " << replacement.dump() << ": not a kiln::Error: " << error.what();
      }
    }
  }
  EXPECT_GT(refused, flat.size());
}

}  // namespace
}  // namespace kiln
