// timm's config.json, in both layouts.
#include "fuzz_input.h"
#include "io/timm_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "config.json");
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_timm_config(path, kiln::ModelConfig{}); });
  return 0;
}
