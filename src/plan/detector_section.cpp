#include "plan/detector_section.h"

#include "core/error.h"

namespace kiln {

nlohmann::json detector_section_to_json(const DetectorSection& section) {
  require(section.image_size > 0 && section.max_det > 0, "detector section: image_size ", section.image_size,
          " and max_det ", section.max_det, " must be positive");
  require(!section.class_names.empty(), "detector section: no class names");
  require(section.letterbox_fill >= 0 && section.letterbox_fill <= 255, "detector section: letterbox fill ",
          section.letterbox_fill, " is not an 8-bit level");
  return {{"model", section.model},
          {"task", section.task},
          {"image_size", section.image_size},
          {"max_det", section.max_det},
          {"class_names", section.class_names},
          {"strides", section.strides},
          {"letterbox", {{"fill", section.letterbox_fill}}}};
}

DetectorSection detector_section_from_json(const JsonField& field) {
  DetectorSection section;
  section.model = field["model"].as_string();
  section.task = field["task"].as_string();
  section.image_size = field["image_size"].as_int(1);
  section.max_det = field["max_det"].as_int(1);
  const JsonField names = field["class_names"];
  section.class_names = names.as_string_vector();
  if (section.class_names.empty()) names.fail("expected at least one class name");
  section.strides = field["strides"].as_int_vector(1, section.image_size);
  section.letterbox_fill = field["letterbox"]["fill"].as_int(0, 255);
  return section;
}

}  // namespace kiln
