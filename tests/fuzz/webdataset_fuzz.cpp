// A webdataset shard: the tar index, grouping members into samples, .cls labels, and reading the
// first samples' image bytes back. An input that starts with gzip's magic bytes is read as a .tar.gz
// shard (decompressed in memory, then indexed), so both paths are fuzzed.
#include "data/webdataset.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  const auto path =
      kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), gzip ? "shard.tar.gz" : "shard.tar");
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::Dataset dataset = kiln::open_webdataset(path.string(), {path});
    for (std::size_t i = 0; i < std::min<std::size_t>(dataset.size(), 4); ++i) (void)dataset.read_bytes(i);
  });
  return 0;
}
