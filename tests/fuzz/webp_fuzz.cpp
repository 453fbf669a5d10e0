// Image decoding from a WEBP corpus (decode_image_bytes picks the decoder by the leading bytes).
#include "fuzz_input.h"
#include "io/image.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kiln::fuzz::expect_result_or_error(
      [&] { (void)kiln::decode_image_bytes(kiln::fuzz::bytes(data, size), "image.webp"); });
  return 0;
}
