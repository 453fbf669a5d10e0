// `kiln study` for a detector family: every variant of the manifest's [study] matrix built from one
// checkpoint, run on the held-out images of a labelled detection set (YOLO layout), compared box by box
// with the fp32 build and scored by mAP against the labels, scanned for NaN/Inf per input, timed in the
// classifier study's interleaved rounds (study/timing_rounds.h) and judged (study/detector_decision.h).
#pragma once

#include <string>
#include <vector>

#include "families/registry.h"
#include "quant/calibration_images.h"
#include "study/detector_study_result.h"

namespace kiln::pipeline {

struct DetectorStudyInputs {
  // The family's graph, the plans' detector section, the detection set's folder (study.data), backend,
  // report folder, demo flag, command line; study.spec is spec.study.
  StudyInputs study;
  DetectorStudySpec spec;
  const DetectorInfo* detector = nullptr;
  ImageToInput to_input;                 // a decoded image as the network's letterboxed input
  std::vector<std::string> notes;        // said under Method (the input size differs from the manifest's)
  bool allow_other_class_names = false;  // the demo: labels of other classes, compared by class id
};

// Fails with one line when study.data is no labelled detection set or its classes do not fit the model.
DetectorStudyResult run_detector_study(const DetectorStudyInputs& inputs);

}  // namespace kiln::pipeline
