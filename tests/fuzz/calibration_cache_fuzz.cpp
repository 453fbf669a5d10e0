// An FP8 calibration cache (--calib-cache).
#include "fuzz_input.h"
#include "quant/calibration_cache.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "calibration.json");
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_calibration_cache(path); });
  return 0;
}
