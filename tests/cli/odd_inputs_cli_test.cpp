// Inputs that are not what they claim, as a user or a script might hand them over: a device or a FIFO
// where a file belongs, a plan whose JSON nests 150,000 deep, a file name that is not UTF-8. Each gets
// one line naming the file within seconds and under 1 GB of memory (or, for the name, a report whose
// text is valid UTF-8) instead of a hang, a crash or an internal error.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "cli_test_util.h"
#include "io/utf8_text.h"
#include "plan/plan_test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::bytes_of;
using testing::CliResult;
using testing::expect_one_line_error;
using testing::kFamilies;
using testing::kPhotos;
using testing::kTiny;
using testing::run_kiln;
using testing::run_shell;
using testing::Scratch;

const std::string kCheckpoint = (kTiny / "model.safetensors").string();
const std::string kDog = (kPhotos / "dog.jpg").string();

// kiln under a 1 GiB address-space limit and a 20 s timeout: a reader that blocks on a FIFO or reads a
// device whole fails the test (exit 124, or out of memory) instead of hanging it.
CliResult run_bounded(const std::string& arguments) {
  return run_shell("bash -c 'ulimit -v 1048576 && exec timeout 20 " + std::string(KILN_BINARY) + " " +
                   arguments + "'");
}

class OddInputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new Scratch();
    fifo_ = scratch_->dir() / "pipe";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    const auto built = run_kiln("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                                kCheckpoint + " --precision fp32 -o " + plan().string());
    ASSERT_EQ(built.exit_code, 0) << built.output;
  }
  static void TearDownTestSuite() { delete scratch_; }
  static fs::path plan() { return scratch_->dir() / "tiny.kplan"; }

  static Scratch* scratch_;
  static fs::path fifo_;
};

Scratch* OddInputs::scratch_ = nullptr;
fs::path OddInputs::fifo_;

TEST_F(OddInputs, ACheckpointThatIsADeviceOrAFifoIsRefusedNotHashedForever) {
  for (const std::string& checkpoint : {std::string("/dev/zero"), fifo_.string()}) {
    const auto result = run_bounded("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                                    checkpoint + " -o " + (scratch_->dir() / "x.kplan").string());
    expect_one_line_error(result, checkpoint + ": is a ");
    EXPECT_NE(result.output.find("not a regular file"), std::string::npos) << result.output;
  }
}

TEST_F(OddInputs, AConfigInputOrCacheThatIsADeviceOrAFifoIsRefused) {
  const std::string family = "run --family timm_resnest --checkpoint " + kCheckpoint;
  for (const std::string& odd : {std::string("/dev/zero"), fifo_.string()}) {
    expect_one_line_error(run_bounded(family + " --config " + odd + " --input " + kDog), odd + ": is a ");
    expect_one_line_error(run_bounded(family + " --input " + odd), odd + ": is a ");
    expect_one_line_error(run_bounded("run " + plan().string() + " --input " + odd), odd + ": is a ");
    expect_one_line_error(run_bounded("inspect " + odd), odd + ": is a ");
    expect_one_line_error(run_bounded("build " + (kFamilies / "timm_resnest").string() + " --checkpoint " +
                                      kCheckpoint + " --precision fp8 --recipe nose " + "--calib-cache " +
                                      odd + " -o " + (scratch_->dir() / "x8.kplan").string()),
                          odd + ": is a ");
  }
}

// A regular file larger than its format can need is refused by its size, before it is read.
TEST_F(OddInputs, AConfigLargerThanAnyConfigIsRefusedBySize) {
  const fs::path big = scratch_->dir() / "config.json";
  fs::resize_file(scratch_->file("config.json", "{}"), std::uint64_t{65} << 20);  // sparse: no disk used
  const auto result = run_bounded("run --family timm_resnest --checkpoint " + kCheckpoint + " --config " +
                                  big.string() + " --input " + kDog);
  expect_one_line_error(result, big.string() + ": 68157440 bytes, more than a config.json can need");
}

// The reader once copied the free-form quantization section recursively and overflowed the stack.
TEST_F(OddInputs, APlanNestedDeepIsOneLineNotACrash) {
  const std::vector<std::byte> good = plan_test::read_bytes(plan());
  nlohmann::json header = plan_test::header_of(good);
  header["quantization"] = {{"nested", "DEEP"}};
  std::string text = header.dump();
  text.replace(text.find("\"DEEP\""), 6, std::string(150'000, '[') + std::string(150'000, ']'));
  const fs::path deep = scratch_->dir() / "deep.kplan";
  plan_test::write_bytes(deep, plan_test::with_header(good, text));
  for (const std::string& command : {"inspect " + deep.string(), "run " + deep.string() + " --input " + kDog,
                                     "bench " + deep.string() + " --duration 10ms",
                                     "eval " + deep.string() + " --data " + kPhotos.string()}) {
    const auto result = run_bounded(command);
    expect_one_line_error(result, deep.string() + ": JSON nests more than 64 levels deep");
    EXPECT_EQ(result.exit_code, 1) << command;
  }
}

// Linux file names are bytes; JSON is UTF-8. Invalid bytes are written as U+FFFD.
TEST_F(OddInputs, AFileNameThatIsNotUtf8IsWrittenAsValidUtf8) {
  const fs::path photos = scratch_->dir() / "caf\xE9";  // Latin-1 e-acute: not UTF-8
  fs::create_directories(photos);
  const std::string name = "caf\xE9.jpg";
  fs::copy_file(kDog, photos / name);
  const fs::path json = scratch_->dir() / "out.json";
  const std::string photo = "'" + (photos / name).string() + "'";
  for (const std::string& command :
       {"run " + plan().string() + " --input " + photo + " --json " + json.string(),
        "run --family timm_resnest --checkpoint " + kCheckpoint + " --input " + photo + " --json " +
            json.string(),
        "eval " + plan().string() + " --data " + photos.string() + " --no-stress --per-image --json " +
            json.string(),
        "dataset " + photos.string() + " --check --json " + json.string()}) {
    fs::remove(json);
    const auto result = run_kiln(command);
    ASSERT_EQ(result.exit_code, 0) << command << "\n" << result.output;
    const std::string written = bytes_of(json);
    EXPECT_EQ(find_invalid_utf8(written), std::string::npos) << command;
    EXPECT_NE(written.find("caf\xEF\xBF\xBD"), std::string::npos) << command << "\n" << written;
    EXPECT_TRUE(nlohmann::json::accept(written)) << command;
  }
}

}  // namespace
}  // namespace kiln
