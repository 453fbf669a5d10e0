// Drawing detections on an image for `kiln run --draw`: each box two pixels wide in a colour per
// class, captioned above its top-left corner (inside the image) with its class name and score on a
// filled band of the box's colour.
#pragma once

#include <string>

#include "families/registry.h"
#include "io/image.h"

namespace kiln::pipeline {

void draw_detection(Image& image, const Detection& detection, const std::string& caption);

}  // namespace kiln::pipeline
