// A labels file (labels.txt / labels.csv beside a folder of images).
#include "data/labels_file.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "labels.csv");
  kiln::fuzz::expect_result_or_error([&] { (void)kiln::read_labels_file(path); });
  return 0;
}
