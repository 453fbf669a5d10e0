// The detector study's accuracy chart: mAP@0.5:0.95 and mAP@0.5 of every variant against its speed-up
// over the baseline, with the bootstrap's 95% intervals (the baseline's mAP less the drop's interval)
// and the thresholds. The latency chart is the classifier study's (study_charts.h).
#pragma once

#include <string>

#include "study/detector_study_result.h"

namespace kiln {

std::string map_chart(const DetectorStudyResult& result);

}  // namespace kiln
