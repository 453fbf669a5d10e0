// kiln study for a detector family (YOLOv10): the detector study (pipeline/detector_study.h) on a
// labelled detection set, or with no --checkpoint the manifest's demo, written up in the -o folder.
#pragma once

#include "cli/study_options.h"
#include "manifest/manifest.h"

namespace kiln::cli {

void study_detector(const StudyCommandOptions& options, const Manifest& manifest);

}  // namespace kiln::cli
