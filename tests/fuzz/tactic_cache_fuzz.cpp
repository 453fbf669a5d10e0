// The CUDA backend's tactic cache file (text, read without a device).
#include "backends/cuda/tactics/tactic_cache.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "tactics.txt");
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::cuda::TacticCache cache(path);
    (void)cache.find("cudnn:conv");
  });
  return 0;
}
