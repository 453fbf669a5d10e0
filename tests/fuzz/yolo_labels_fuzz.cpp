// A YOLO label file (CLASS CX CY W H per line) and, on the same bytes, a data.yaml: each parse returns or
// refuses with one line, and what a label file returns lies in bounds.
#include <cstdio>

#include "data/yolo_data_yaml.h"
#include "data/yolo_labels.h"
#include "fuzz_input.h"

namespace {

constexpr std::size_t kClasses = 80;

void check_bounds(const std::vector<kiln::YoloBox>& boxes) {
  for (const kiln::YoloBox& box : boxes) {
    const bool inside = box.label >= 0 && static_cast<std::size_t>(box.label) < kClasses;
    for (const double value : {box.cx, box.cy, box.width, box.height}) {
      if (!inside || !(value >= 0.0 && value <= 1.0)) {
        std::fprintf(stderr, "label file read a box out of bounds\n");
        __builtin_trap();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = kiln::fuzz::write_input(kiln::fuzz::bytes(data, size), "labels.txt");
  kiln::fuzz::expect_result_or_error([&] { check_bounds(kiln::read_yolo_labels(path, kClasses)); });
  kiln::fuzz::expect_result_or_error(
      [&] { (void)kiln::parse_yolo_data_yaml(std::string(kiln::fuzz::text(data, size)), "data.yaml"); });
  return 0;
}
