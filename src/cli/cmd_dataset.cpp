// kiln dataset: describe a dataset (its kind, images, labels, the sample and split a study would
// take) and, with --check, decode every image it would read. `kiln dataset import-idx` (its own file)
// writes one.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "core/progress.h"
#include "data/class_names.h"
#include "data/image_loop.h"
#include "data/open_dataset.h"
#include "data/sampling.h"
#include "data/yolo_dataset.h"
#include "data/yolo_labels.h"
#include "io/json_formats.h"

namespace kiln::cli {

namespace {

struct DatasetOptions {
  std::string data;
  std::optional<std::size_t> sample;
  std::optional<std::size_t> split_every;
  std::optional<std::int64_t> num_classes;
  bool check = false;
  bool strict = false;
  std::optional<std::string> json;  // FILE, "-" for stdout
};

struct LabelRange {
  std::int64_t low = 0;
  std::int64_t high = 0;
};

std::optional<LabelRange> label_range(const Dataset& dataset) {
  if (!dataset.labelled()) return std::nullopt;
  const auto [low, high] =
      std::minmax_element(dataset.samples().begin(), dataset.samples().end(),
                          [](const Sample& a, const Sample& b) { return a.label < b.label; });
  return LabelRange{low->label, high->label};
}

// A detection set in the YOLO layout, when DATA is one: a data.yaml, images/ beside labels/, or a folder of
// images whose labels folder exists. Read as a folder of images it would look like one class folder.
std::optional<YoloLayout> yolo_layout(const std::string& data) {
  const std::filesystem::path root = data;
  std::error_code error;
  const auto folder = [&](const std::filesystem::path& path) {
    return std::filesystem::is_directory(path, error);
  };
  const auto labels = yolo_label_path(root / "x.jpg");
  const bool yolo = std::filesystem::is_regular_file(root / "data.yaml", error) ||
                    (folder(root / "images") && folder(root / "labels")) ||
                    (labels && folder(labels->parent_path()));
  return yolo ? find_yolo_layout(data) : std::nullopt;
}

// What kind of set DATA is, as the summary and the JSON name it.
std::string kind_name(const Dataset& dataset, const std::optional<YoloLayout>& yolo) {
  return yolo ? std::string("yolo-detection") : std::string(dataset_kind_name(dataset.kind()));
}

// The class names beside a webdataset's shards (labels.txt); a file that does not name classes is
// reported and left out, since describing the dataset does not need it.
std::vector<std::string> class_names_or_warn(const Dataset& dataset) {
  try {
    if (auto names = webdataset_class_names(dataset)) return *names;
  } catch (const Error& error) {
    std::cerr << "kiln: warning: " << error.what() << " (class names left out)\n";
  }
  return {};
}

// The text summary, one line per fact.
void print_text(const DatasetOptions& options, const Dataset& dataset, const std::optional<YoloLayout>& yolo,
                const std::vector<std::size_t>& indices, const std::optional<CalibrationSplit>& split,
                const std::vector<std::string>& names, std::size_t bad) {
  const auto range = label_range(dataset);
  std::cout << "dataset  " << (yolo ? options.data : dataset.source()) << "\n";
  std::cout << "kind     " << kind_name(dataset, yolo);
  if (dataset.kind() == DatasetKind::kWebDataset) {
    std::cout << ", " << dataset.shards().size() << " shard(s)";
  }
  std::cout << "\nimages   " << dataset.size() << "\n";
  if (yolo) {
    std::cout << "labels   boxes in " << yolo->labels.string() << "\n";
  } else if (range) {
    std::cout << "labels   " << dataset.classes_seen() << " classes seen, labels " << range->low << " to "
              << range->high << "\n";
  } else {
    std::cout << "labels   none\n";
  }
  if (!names.empty()) {
    std::cout << "names   ";
    for (std::size_t index = 0; index < names.size(); ++index) {
      std::cout << (index == 0 ? " " : ", ") << index << " " << names[index];
    }
    std::cout << "\n";
  }
  if (options.sample) {
    std::cout << "sample   " << indices.size() << " of " << dataset.size() << ", indices floor(i * "
              << dataset.size() << " / " << indices.size() << ")\n";
  }
  if (split) {
    std::cout << "split    1 in " << *options.split_every << ": " << split->calibration.size()
              << " calibration, " << split->held_out.size() << " held out\n";
  }
  if (options.check) {
    std::cout << "check    " << indices.size() - bad << " decoded, " << bad << " bad\n";
  }
}

void describe(const DatasetOptions& options) {
  check_json_target(options.json, {{"the dataset", options.data}});
  // A YOLO set's images are read as the folder they are; its classes are data.yaml's names.
  const std::optional<YoloLayout> yolo = yolo_layout(options.data);
  if (yolo && options.num_classes)
    usage_error("--num-classes checks class labels, but " + options.data + " is a YOLO detection set");
  const Dataset dataset = open_dataset(yolo ? yolo->images.string() : options.data);
  if (options.num_classes) dataset.check_labels(*options.num_classes);

  std::vector<std::size_t> indices;
  if (options.sample) {
    indices = stride_sample(dataset.size(), *options.sample);
  } else {
    indices.resize(dataset.size());
    std::iota(indices.begin(), indices.end(), std::size_t{0});
  }
  std::optional<CalibrationSplit> split;
  if (options.split_every) split = split_every(indices, *options.split_every);

  std::vector<SkippedImage> bad;
  if (options.check) {
    Progress progress("check", indices.size());
    for_each_decoded_image(
        dataset, indices, [](std::size_t, const Image&) {}, options.strict, &progress, std::cerr, &bad);
  }

  const auto range = label_range(dataset);
  const std::vector<std::string> names = yolo ? yolo->names : class_names_or_warn(dataset);
  if (options.json) {
    nlohmann::json report = {{"format", json_format::kDataset},
                             {"source", yolo ? options.data : dataset.source()},
                             {"kind", kind_name(dataset, yolo)},
                             {"images", dataset.size()},
                             {"labelled", yolo.has_value() || dataset.labelled()},
                             {"classes_seen", dataset.classes_seen()}};
    if (dataset.kind() == DatasetKind::kWebDataset) report["shards"] = dataset.shards().size();
    if (yolo) report["labels"] = yolo->labels.string();
    if (range) report["label_range"] = {range->low, range->high};
    if (!names.empty()) report["class_names"] = names;
    if (options.sample) report["sample"] = {{"count", indices.size()}, {"of", dataset.size()}};
    if (split) {
      report["split"] = {{"every", *options.split_every},
                         {"calibration", split->calibration.size()},
                         {"held_out", split->held_out.size()}};
    }
    if (options.check) {
      nlohmann::json entries = nlohmann::json::array();
      for (const auto& skipped : bad) {
        entries.push_back({{"name", dataset.sample(skipped.index).name}, {"error", skipped.reason}});
      }
      report["check"] = {{"checked", indices.size()}, {"bad", entries}};
    }
    write_json_report(options.json, report);
  }
  if (!json_to_stdout(options.json)) print_text(options, dataset, yolo, indices, split, names, bad.size());
  // Each bad image is already listed; exit 1 without a further message.
  if (!bad.empty()) throw CLI::RuntimeError(1);
}

}  // namespace

void add_dataset_command(CLI::App& app) {
  auto options = std::make_shared<DatasetOptions>();
  CLI::App* cmd =
      app.add_subcommand("dataset", "Describe a dataset and the sample and split a study would take");
  cmd->add_option("data", options->data,
                  "A folder of images (flat, or one sub-folder per class), a .tar or .tar.gz shard, a folder "
                  "of shards, "
                  "or a shard pattern such as 'shard-{000000..000009}.tar'")
      ->type_name("DATA");
  CLI::Option* images = cmd->add_option("--images", options->sample,
                                        "Take N images at a fixed stride: indices floor(i * images / N) "
                                        "(old name: --sample)")
                            ->check(whole_between(1, kMaxCount));
  add_warning_alias(*cmd, images, "--sample");
  CLI::Option* every =
      cmd->add_option("--every", options->split_every,
                      "Split the (sampled) images: every K-th calibrates, the others are held out (old name: "
                      "--split-every)")
          ->check(whole_between(1, kMaxCount));
  add_warning_alias(*cmd, every, "--split-every");
  cmd->add_option("--num-classes", options->num_classes, "Check every label lies in [0, C)")
      ->check(whole_between(1, kMaxCount));
  auto* check = cmd->add_flag("--check", options->check,
                              "Decode every (sampled) image; bad ones are listed and make the exit status 1");
  cmd->add_flag("--strict", options->strict, "With --check, stop at the first bad image")->needs(check);
  add_json_file_option(*cmd, options->json, "the report");
  add_dataset_import_command(*cmd);
  cmd->callback([options, cmd] {
    if (!cmd->get_subcommands().empty()) return;  // import-idx did the work
    if (options->data.empty())
      usage_error("kiln dataset needs DATA (a folder, shard or pattern), or import-idx");
    describe(*options);
  });
}

}  // namespace kiln::cli
