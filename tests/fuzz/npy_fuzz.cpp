// A .npy array (the inputs `kiln run` reads).
#include "fuzz_input.h"
#include "io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "input.npy");
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_npy(path); });
  return 0;
}
