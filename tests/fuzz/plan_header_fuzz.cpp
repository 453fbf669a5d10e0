// A plan's JSON header, framed as a well-formed file (preamble, zero weights of the size the header
// names, trailer), so that every input reaches the header's reader; a plan that loads is written again.
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "fuzz_input.h"
#include "plan/plan_format.h"
#include "plan/plan_reader.h"
#include "plan/plan_writer.h"

namespace {

namespace fmt = kiln::plan_format;

// The blob size the header asks for, when it names one up to 1 MiB.
std::size_t blob_size_of(std::string_view header) {
  const nlohmann::json json = nlohmann::json::parse(header.begin(), header.end(), nullptr, false);
  if (!json.is_object() || !json.contains("blob") || !json["blob"].is_object()) return 0;
  const auto size = json["blob"].find("size");
  if (size == json["blob"].end() || !size->is_number_unsigned()) return 0;
  return std::min<std::size_t>(size->get<std::uint64_t>(), std::size_t{1} << 20);
}

template <typename Integer>
void append_little_endian(std::vector<std::uint8_t>& out, Integer value) {
  for (std::size_t i = 0; i < sizeof(Integer); ++i)
    out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}

std::vector<std::uint8_t> frame(std::string_view header) {
  std::vector<std::uint8_t> file(fmt::kMagic.begin(), fmt::kMagic.end());
  append_little_endian(file, fmt::kVersion);
  append_little_endian(file, std::uint32_t{0});
  append_little_endian(file, static_cast<std::uint64_t>(header.size()));
  file.insert(file.end(), header.begin(), header.end());
  file.resize(fmt::align_up(file.size()) + blob_size_of(header), 0);
  file.resize(file.size() + fmt::kDigestSize, 0);  // the checksum, not verified
  file.insert(file.end(), fmt::kEndMarker.begin(), fmt::kEndMarker.end());
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> file = frame(kiln::fuzz::text(data, size));
  const auto path = kiln::fuzz::write_input(file, "model.kplan");
  kiln::fuzz::expect_result_or_error([&] {
    const kiln::Plan plan = kiln::read_plan(path, {.verify_checksum = false});
    std::ostringstream out;
    kiln::write_plan(out, plan, "rewritten.kplan");
  });
  return 0;
}
