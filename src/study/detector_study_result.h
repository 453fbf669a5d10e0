// What a detector study found: the parts every study has (plans, timing rounds, kernel time, speed
// matrix, environment, NaN/Inf counts per input, in StudyResult, so the shared report sections and
// charts read them), and the detector's own: box parity with fp32, mAP against the labels with the
// paired drop against the baseline, and the decision on them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "study/detector_decision.h"
#include "study/detector_study_spec.h"
#include "study/study_runner.h"

namespace kiln {

struct DetectorStudyResult {
  // study.inputs.spec is spec.study; each variant's eval holds its NaN/Inf counts only (images and
  // stress inputs), its latency, plan and profile figures as a classifier's.
  StudyResult study;
  DetectorStudySpec spec;
  std::vector<DetectorQuality> quality;  // quality[i] is study.variants[i]'s
  DetectorDecision decision;
  std::string labels;              // the labels folder mAP was measured against
  std::vector<std::string> names;  // the classes, as the labels' data.yaml (else the model) names them
  std::vector<std::string> notes;  // what a reader must know to read the figures (said under Method)
  nlohmann::json to_json() const;
};

}  // namespace kiln
