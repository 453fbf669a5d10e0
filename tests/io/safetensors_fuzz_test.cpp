// Damaged files: every truncation and thousands of seeded header mutations must end in a
// kiln::Error or a file whose tensors are all readable, never a crash (run under the sanitizers too).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "safetensors_test_util.h"

namespace kiln {
namespace {

constexpr int kMutations = 4000;
constexpr int kNumberMutations = 2000;

volatile unsigned checksum = 0;  // keeps the reads of read_everything from being optimised away

// A small valid file with metadata, several dtypes, a scalar and a zero-size tensor.
std::string valid_file(const std::filesystem::path& path) {
  std::map<std::string, Tensor> tensors;
  tensors.emplace("conv.weight", Tensor(DType::kF32, {2, 1, 3}));
  tensors.emplace("conv.bias", Tensor(DType::kF16, {2}));
  tensors.emplace("bn.num_batches_tracked", Tensor(DType::kI64, {}));
  tensors.emplace("empty", Tensor(DType::kBF16, {0, 4}));
  tensors.emplace("mask", Tensor(DType::kBool, {3}));
  write_safetensors(path, tensors, {{"format", "pt"}});
  return test::read_bytes(path);
}

// Touches every byte of every tensor, so that a view past the mapping shows up under ASan or as a
// crash, and checks what open() promised.
void read_everything(const SafetensorsFile& file) {
  unsigned sum = 0;
  for (const auto& name : file.names()) {
    const Tensor& tensor = file.tensor(name);
    for (std::size_t i = 0; i < tensor.nbytes(); ++i) sum += static_cast<unsigned>(tensor.bytes()[i]);
  }
  checksum = sum;
}

// Opens the file; true when it was accepted, false on a kiln::Error. Anything else fails the test.
bool try_open(const std::filesystem::path& path, const std::string& context) {
  try {
    read_everything(SafetensorsFile::open(path));
    return true;
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << context << ": " << message;
    EXPECT_NE(message.find(path.filename().string()), std::string::npos) << context << ": " << message;
    return false;
  } catch (const std::exception& error) {
    ADD_FAILURE() << context << ": non-kiln exception: " << error.what();
    return false;
  }
}

TEST(SafetensorsFuzz, EveryTruncationThrows) {
  test::TempDir dir;
  const std::string bytes = valid_file(dir / "valid.safetensors");
  ASSERT_TRUE(try_open(dir / "valid.safetensors", "untouched file"));
  const auto path = dir / "cut.safetensors";
  for (std::size_t length = 0; length < bytes.size(); ++length) {
    test::write_bytes(path, std::string_view(bytes).substr(0, length));
    EXPECT_FALSE(try_open(path, "prefix of " + std::to_string(length) + " bytes")) << length;
  }
}

TEST(SafetensorsFuzz, HeaderMutationsNeverCrash) {
  test::TempDir dir;
  const std::string bytes = valid_file(dir / "valid.safetensors");
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<unsigned char>(bytes[i]);
  const std::size_t header_end = 8 + header_size;

  std::mt19937 random(20240611);
  const auto pick = [&](std::size_t below) {
    return std::uniform_int_distribution<std::size_t>(0, below - 1)(random);
  };
  const auto path = dir / "mutated.safetensors";
  int accepted = 0;
  for (int iteration = 0; iteration < kMutations; ++iteration) {
    std::string mutated = bytes;
    const int edits = 1 + static_cast<int>(pick(3));
    for (int edit = 0; edit < edits; ++edit) {
      // Mostly the JSON text; sometimes the length prefix.
      const std::size_t at = pick(8) == 0 ? pick(8) : 8 + pick(header_size);
      switch (pick(4)) {
        case 0:  // flip one bit
          mutated[at] = static_cast<char>(mutated[at] ^ (1 << pick(8)));
          break;
        case 1:  // any byte
          mutated[at] = static_cast<char>(pick(256));
          break;
        case 2:  // a digit, so offsets and shapes change but the JSON often stays valid
          mutated[at] = static_cast<char>('0' + pick(10));
          break;
        default:  // a JSON-significant character
          mutated[at] = "{}[],:\" "[pick(8)];
          break;
      }
    }
    test::write_bytes(path, mutated);
    if (try_open(path, "iteration " + std::to_string(iteration))) ++accepted;
  }
  EXPECT_LT(header_end, bytes.size());
  // Most mutations break the file; a few leave it valid (e.g. a space in padding). Either is fine.
  EXPECT_LT(accepted, kMutations);
}

// Replaces whole numbers (shape extents, offsets) with boundary values and fixes the length prefix,
// so that the JSON stays valid and the shape/offset/coverage checks are what must catch the damage.
TEST(SafetensorsFuzz, NumberMutationsNeverCrash) {
  test::TempDir dir;
  const std::string bytes = valid_file(dir / "valid.safetensors");
  std::uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = header_size << 8 | static_cast<unsigned char>(bytes[i]);
  const std::string header = bytes.substr(8, header_size);
  const std::string data = bytes.substr(8 + header_size);
  std::vector<std::pair<std::size_t, std::size_t>> numbers;  // (position, length) of digit runs
  for (std::size_t i = 0; i < header.size();) {
    std::size_t end = i;
    while (end < header.size() && header[end] >= '0' && header[end] <= '9') ++end;
    // Digits inside names ("F32") are part of a word; only standalone numbers count.
    if (end > i && (i == 0 || header[i - 1] == '[' || header[i - 1] == ',')) numbers.emplace_back(i, end - i);
    i = end > i ? end : i + 1;
  }
  ASSERT_GE(numbers.size(), 10u);

  const std::string interesting[] = {"0",
                                     "1",
                                     "2",
                                     "3",
                                     "4",
                                     "7",
                                     "8",
                                     "12",
                                     "24",
                                     "47",
                                     "48",
                                     "49",
                                     "64",
                                     "-1",
                                     "1.5",
                                     "1e3",
                                     "null",
                                     "[]",
                                     "\"1\"",
                                     "9223372036854775807",
                                     "9223372036854775808",
                                     "18446744073709551615",
                                     "18446744073709551616",
                                     std::to_string(data.size()),
                                     std::to_string(data.size() + 1)};
  std::mt19937 random(7);
  const auto pick = [&](std::size_t below) {
    return std::uniform_int_distribution<std::size_t>(0, below - 1)(random);
  };
  const auto path = dir / "mutated.safetensors";
  int accepted = 0;
  for (int iteration = 0; iteration < kNumberMutations; ++iteration) {
    std::string mutated_header = header;
    // Edit from the back so earlier positions stay valid.
    std::set<std::size_t, std::greater<>> chosen;
    for (std::size_t edits = 1 + pick(2); chosen.size() < edits;) chosen.insert(pick(numbers.size()));
    for (const std::size_t index : chosen) {
      const auto [at, length] = numbers[index];
      mutated_header.replace(at, length, interesting[pick(std::size(interesting))]);
    }
    test::write_bytes(path, test::safetensors_bytes(mutated_header, data));
    if (try_open(path, "iteration " + std::to_string(iteration) + ": " + mutated_header)) ++accepted;
  }
  EXPECT_LT(accepted, kNumberMutations);
}

}  // namespace
}  // namespace kiln
