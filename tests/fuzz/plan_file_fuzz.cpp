// A whole plan file: preamble, header, weight blob and trailer. The checksum is not verified, so that
// mutations reach what lies behind it; a plan that loads is written again.
#include <sstream>

#include "fuzz_input.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "model.kplan");
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::Plan plan = kiln::read_plan(path, {.verify_checksum = false});
    std::ostringstream out;
    kiln::write_plan(out, plan, "rewritten.kplan");
  });
  return 0;
}
