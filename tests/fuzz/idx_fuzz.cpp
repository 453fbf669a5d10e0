// An IDX file (MNIST's format, raw or gzip), read as images and as labels (kiln dataset import-idx).
#include "data/idx_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "input.idx");
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_idx_images(path); });
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_idx_labels(path, 3); });
  return 0;
}
