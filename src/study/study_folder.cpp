#include "study/study_folder.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"
#include "io/atomic_file.h"

namespace kiln {

namespace fs = std::filesystem;

namespace {

// An earlier study's study.json: an object with its family and variants; null when there is none.
nlohmann::json earlier_report(const fs::path& dir) {
  const fs::path file = dir / "study.json";
  if (!fs::exists(file)) return {};
  const std::string text = read_regular_file(file, kMaxReportJsonBytes, "a study.json");
  if (!nlohmann::json::accept(text)) return {};  // not JSON, so no study's
  nlohmann::json report = parse_user_json(text, file.string());
  const bool study = report.is_object() && report.contains("family") && report.contains("variants") &&
                     report["variants"].is_array();
  return study ? report : nlohmann::json();
}

// The plans an earlier study listed in its study.json (names directly under plans/).
std::set<fs::path> plans_of(const nlohmann::json& report, const fs::path& dir) {
  std::set<fs::path> plans;
  for (const auto& variant : report["variants"]) {
    if (!variant.is_object() || !variant.contains("plan") || !variant["plan"].is_string()) continue;
    const fs::path name = variant["plan"].get<std::string>();
    if (name.has_filename() && name == name.filename()) plans.insert(dir / "plans" / name);  // no ../
  }
  return plans;
}

// Written before a study's first plan and removed once its report is written: a folder holding it holds
// a study that was interrupted or failed, and it lists the plans that study wrote.
constexpr const char* kUnfinishedMarker = ".kiln-study-unfinished.json";

// A marker that is missing or not kiln's JSON lists nothing.
std::set<fs::path> unfinished_plans(const fs::path& dir) {
  const fs::path file = dir / kUnfinishedMarker;
  std::set<fs::path> plans;
  if (!fs::exists(file)) return plans;
  const std::string text = read_regular_file(file, kMaxReportJsonBytes, "a study's unfinished marker");
  if (!nlohmann::json::accept(text)) return plans;
  const nlohmann::json marker = parse_user_json(text, file.string());
  if (!marker.is_object() || !marker.contains("plans") || !marker["plans"].is_array()) return plans;
  for (const auto& plan : marker["plans"]) {
    if (!plan.is_string()) continue;
    const fs::path name = plan.get<std::string>();
    if (name.has_filename() && name == name.filename()) plans.insert(dir / "plans" / name);  // no ../
  }
  return plans;
}

bool holds_report(const fs::path& dir) {
  return fs::exists(dir / "STUDY.md") || fs::exists(dir / "study.json");
}

bool is_within(const fs::path& inner, const fs::path& outer) {
  std::error_code error;
  const fs::path a = fs::weakly_canonical(inner, error);
  if (error) return false;
  const fs::path b = fs::weakly_canonical(outer, error);
  if (error) return false;
  const auto [end_b, end_a] = std::mismatch(b.begin(), b.end(), a.begin(), a.end());
  return end_b == b.end();
}

}  // namespace

const std::vector<std::string>& study_report_files() {
  static const std::vector<std::string> kFiles = {"STUDY.md", "study.json", "latency.svg",
                                                  "accuracy_vs_speed.svg"};
  return kFiles;
}

void prepare_study_folder(const fs::path& dir, const std::vector<fs::path>& plans, bool force,
                          const StudyFolderNames& names) {
  const std::string& o = names.output;
  require(!fs::exists(dir) || fs::is_directory(dir), dir.string(), ": ", o,
          " names a file; a study writes a folder: choose another ", o);
  const bool unfinished = fs::exists(dir / kUnfinishedMarker);
  require(!unfinished || force, dir.string(), ": ", o,
          " holds a study that stopped before writing its report (interrupted or failed): give ", names.force,
          " to replace it, or choose another ", o);
  const bool earlier = holds_report(dir);
  require(!earlier || force, dir.string(), ": ", o, " holds a study report (STUDY.md / study.json): give ",
          names.force, " to replace it, or another ", o);
  const nlohmann::json report = earlier ? earlier_report(dir) : nlohmann::json();
  require(!earlier || unfinished || !report.is_null(), dir.string(), ": the STUDY.md / study.json in ", o,
          " were not made by a study (no study.json of one), so ", names.force,
          " leaves them: move them, or choose another ", o);
  std::set<fs::path> made = report.is_null() ? std::set<fs::path>{} : plans_of(report, dir);
  if (unfinished) made.merge(unfinished_plans(dir));
  for (const fs::path& plan : plans) {
    require(!fs::exists(plan) || made.count(plan) > 0, plan.string(),
            ": not made by an earlier study in this folder, and the study would write over it: move it, or "
            "choose another ",
            o);
  }
  if (!earlier && !unfinished) {
    for (const std::string& name : study_report_files()) {
      require(!fs::exists(dir / name), (dir / name).string(),
              ": not made by a study (no STUDY.md or study.json beside it), and the study would write over "
              "it: move it, or choose another ",
              o);
    }
  } else {
    for (const std::string& name : study_report_files()) fs::remove(dir / name);
    for (const fs::path& plan : made) fs::remove(plan);
    std::error_code ignored;
    if (fs::is_empty(dir / "plans", ignored)) fs::remove(dir / "plans", ignored);
  }
}

void record_unfinished_plan(const fs::path& dir, const fs::path& plan) {
  nlohmann::json names = nlohmann::json::array();
  for (const fs::path& earlier : unfinished_plans(dir)) names.push_back(earlier.filename().string());
  names.push_back(plan.filename().string());
  fs::create_directories(dir);
  write_file_atomically(dir / kUnfinishedMarker, [&](std::ostream& out) {
    out << nlohmann::json{{"study", "unfinished: its report was never written"}, {"plans", names}}.dump(2)
        << "\n";
  });
}

void finish_study_folder(const fs::path& dir) { fs::remove(dir / kUnfinishedMarker); }

void refuse_study_folder_over_inputs(const fs::path& dir, const std::vector<fs::path>& plans,
                                     const std::vector<NamedPath>& inputs, const StudyFolderNames& names) {
  const std::string& o = names.output;
  std::vector<fs::path> outputs = plans;
  for (const std::string& name : study_report_files()) outputs.push_back(dir / name);
  for (const fs::path& output : outputs) refuse_output_over_inputs({o, output}, inputs);
  for (const NamedPath& input : inputs) {
    if (input.path.empty() || !fs::is_directory(input.path)) continue;
    require(!is_within(dir, input.path), dir.string(), ": ", o, " lies inside ", input.option, " '",
            input.path.string(), "'; the report and plans would join its files: choose another ", o);
  }
}

}  // namespace kiln
