// kiln run for detectors: letterboxed photos (or letterboxed .npy batches) through a detector plan or
// checkpoint; boxes printed with class names, optionally drawn and written as JSON.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/detector_commands.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "io/json_formats.h"
#include "io/npy.h"
#include "io/utf8_text.h"
#include "pipeline/detection_drawing.h"
#include "pipeline/detector_engine.h"
#include "pipeline/detector_inputs.h"
#include "pipeline/detector_plan.h"

namespace kiln::cli {

namespace {

// Where the drawing of input `index` of `count` goes: the path itself for one input, else name_<index>.png.
std::filesystem::path drawing_path(const std::filesystem::path& path, std::size_t index, std::size_t count) {
  if (count == 1) return path;
  return path.parent_path() / cat(path.stem().string(), "_", index, path.extension().string());
}

// The config.json a checkpoint run reads: --config, else the one beside the checkpoint.
std::filesystem::path checkpoint_config(const DetectorRunRequest& request) {
  return request.config.value_or(request.checkpoint.parent_path() / "config.json");
}

// The family, the plan and the config agree; returns the detector and its input size.
std::pair<const DetectorInfo*, std::int64_t> check_request(const DetectorRunRequest& request) {
  if (!request.plan) {
    const DetectorInfo* detector = find_detector(request.family);
    if (request.checkpoint.empty())
      usage_error(
          cat("--family ", request.family, " runs a checkpoint (give --checkpoint) or a detector plan"));
    const std::filesystem::path config = checkpoint_config(request);
    require(std::filesystem::exists(config), config.string(),
            ": missing; a detector checkpoint needs its config.json (model, imgsz, names)");
    return {detector, read_yolo_config(config).imgsz};
  }
  const std::string name = request.plan_path.string();
  if (!request.checkpoint.empty())
    usage_error("give either a plan file or --family with --checkpoint, not both");
  const DetectorInfo& detector = pipeline::plan_detector(*request.plan, name);
  require(request.family.empty() || request.family == detector.name, "--family ", request.family, ": ", name,
          " is ", pipeline::plan_kind(*request.plan));
  const std::int64_t size = request.plan->detector->image_size;
  if (request.config) {
    const std::int64_t imgsz = read_yolo_config(*request.config).imgsz;
    require(imgsz == size, request.config->string(), ": key 'imgsz': ", imgsz, " differs from the ", size,
            " that ", name, " was built for");
  }
  return {&detector, size};
}

std::string class_name(const YoloConfig& config, std::int64_t label) {
  const auto index = static_cast<std::size_t>(label);
  return index < config.names.size() ? config.names[index] : cat("class ", label);
}

}  // namespace

bool runs_detector(const std::string& family, const Plan* plan) {
  return find_detector(family) != nullptr || (plan != nullptr && plan->detector.has_value());
}

void run_detector(const DetectorRunRequest& request) {
  const auto [detector, size] = check_request(request);
  const pipeline::DetectorInputs inputs = pipeline::load_detector_inputs(request.inputs, *detector, size);
  CompileOptions compile;
  compile.batch = inputs.rows();
  compile.strict_backend = request.strict_backend;
  compile.tactic_cache = request.tactic_cache;
  std::optional<pipeline::DetectorEngine> engine;
  if (request.plan) {
    engine.emplace(request.plan, request.plan_path.string(), request.backend, compile);
  } else {
    engine.emplace(*detector, request.checkpoint, request.config, compile.batch, request.backend, compile);
  }
  if (!engine->engine().fallback_layers().empty()) std::cerr << fallback_warning(engine->engine()) << "\n";
  const pipeline::DetectorRun run = engine->detect(inputs);
  if (request.save_output) write_npy(*request.save_output, run.decoded);
  const YoloConfig& config = engine->config();
  const std::string model = request.plan ? request.plan_path.string() : request.checkpoint.string();

  std::cout << detector->name << " (" << config.model << ", " << size << "x" << size << ") on "
            << inputs.labels.size() << " input(s), " << engine->backend() << ", " << std::fixed
            << std::setprecision(1) << run.seconds * 1000.0 << " ms";
  if (!request.plan)
    std::cout << "; " << engine->unused_keys().size() << " checkpoint tensors unused (the one-to-many head)";
  std::cout << "\n";
  nlohmann::json report = {{"format", json_format::kDetections}, {"family", detector->name}, {"model", model},
                           {"backend", engine->backend()},      {"seconds", run.seconds},
                           {"min_score", request.min_score},    {"unused_keys", engine->unused_keys()},
                           {"results", nlohmann::json::array()}};
  for (std::size_t i = 0; i < inputs.labels.size(); ++i) {
    const Image& picture = inputs.pictures[i];
    std::cout << inputs.labels[i] << " (" << picture.width << "x" << picture.height
              << (inputs.letterboxes[i] ? "" : ", letterboxed: boxes in input pixels") << ")\n";
    nlohmann::json found = nlohmann::json::array();
    Image drawing = picture;
    for (const Detection& d : run.detections[i]) {
      if (d.score < request.min_score) continue;
      const std::string name = class_name(config, d.label);
      std::cout << "  " << std::setprecision(3) << d.score << "  " << name << " (" << d.label << ")  ["
                << std::setprecision(1) << d.x1 << ", " << d.y1 << ", " << d.x2 << ", " << d.y2 << "]\n";
      found.push_back(
          {{"label", d.label}, {"name", name}, {"score", d.score}, {"box", {d.x1, d.y1, d.x2, d.y2}}});
      std::ostringstream caption;
      caption << name << " " << std::fixed << std::setprecision(3) << d.score;
      pipeline::draw_detection(drawing, d, caption.str());
    }
    if (found.empty())
      std::cout << "  no detection scores " << number_text(request.min_score) << " or more\n";
    report["results"].push_back({{"input", inputs.labels[i]}, {"detections", found}});
    if (request.draw) write_png(drawing_path(*request.draw, i, inputs.labels.size()), drawing);
  }
  if (request.json) {
    write_json_file(*request.json, report);
  }
}

}  // namespace kiln::cli
