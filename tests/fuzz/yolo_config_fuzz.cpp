// A YOLOv10 checkpoint's config.json (model, task, imgsz, max_det, class names).
#include "families/yolov10/config.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kiln::fuzz::expect_result_or_error(
      [&] { (void)kiln::parse_yolo_config(std::string(kiln::fuzz::text(data, size)), "config.json"); });
  return 0;
}
