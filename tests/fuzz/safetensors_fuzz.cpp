// A safetensors checkpoint: the header, every tensor's dtype, shape and byte range, the metadata.
#include "fuzz_input.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "model.safetensors");
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::SafetensorsFile file = kiln::SafetensorsFile::open(path);
    std::int64_t elements = 0;
    for (const std::string& name : file.names()) elements += file.tensor(name).numel();
    (void)elements;
  });
  return 0;
}
