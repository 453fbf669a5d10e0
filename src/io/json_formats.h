// The "format" every JSON file or stream kiln writes for people and scripts carries: "kiln.<what>/<N>",
// what the document is and the version of its layout. N goes up when a key changes meaning or goes
// away; new keys keep it. docs/JSON.md describes each with an example, and tests/cli/json_formats_cli_test
// checks those examples against what the commands write.
#pragma once

#include <string_view>

namespace kiln::json_format {

inline constexpr std::string_view kBuild = "kiln.build/1";                   // kiln build --json
inline constexpr std::string_view kRun = "kiln.run/1";                       // kiln run --json, a classifier
inline constexpr std::string_view kDetections = "kiln.detections/1";         // kiln run --json, a detector
inline constexpr std::string_view kBench = "kiln.bench/1";                   // kiln bench --json
inline constexpr std::string_view kEval = "kiln.eval/1";                     // kiln eval --json, a classifier
inline constexpr std::string_view kDetectorEval = "kiln.detector-eval/1";    // kiln eval --json, a detector
inline constexpr std::string_view kCheckpoint = "kiln.checkpoint/1";         // kiln inspect model.safetensors
inline constexpr std::string_view kGraph = "kiln.graph/1";                   // kiln inspect CKPT --family F
inline constexpr std::string_view kPlan = "kiln.plan/1";                     // kiln inspect PLAN
inline constexpr std::string_view kValidate = "kiln.validate/1";             // kiln validate --json
inline constexpr std::string_view kDataset = "kiln.dataset/1";               // kiln dataset --json
inline constexpr std::string_view kDatasetImport = "kiln.dataset-import/1";  // kiln dataset import-idx --json
inline constexpr std::string_view kStudy = "kiln.study/1";  // study.json of a classifier study
inline constexpr std::string_view kDetectorStudy = "kiln.detector-study/1";  // study.json of a detector study

}  // namespace kiln::json_format
