// kiln dataset import-idx: an IDX pair (MNIST, Fashion-MNIST) written as webdataset shards or a folder
// of class folders that kiln's dataset readers open, labelled (data/idx_import.h).
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "cli/json_output.h"
#include "cli/option_checks.h"
#include "core/error.h"
#include "data/idx_import.h"
#include "io/json_formats.h"

namespace kiln::cli {

namespace {

struct ImportOptions {
  IdxImportRequest request;
  std::optional<std::size_t> first;
  std::string format = "webdataset";
  std::optional<std::string> json;  // FILE, "-" for stdout
};

nlohmann::json report_json(const IdxImportRequest& request, const IdxImportResult& result) {
  nlohmann::json classes = nlohmann::json::array();
  for (std::size_t index = 0; index < result.class_names.size(); ++index) {
    classes.push_back(
        {{"index", index}, {"name", result.class_names[index]}, {"images", result.class_counts[index]}});
  }
  nlohmann::json shards = nlohmann::json::array();
  for (const auto& shard : result.shards) shards.push_back(shard.string());
  nlohmann::json report = {{"format", json_format::kDatasetImport},
                           {"images_idx", request.images.string()},
                           {"labels_idx", request.labels.string()},
                           {"out", request.out.string()},
                           {"layout", request.format == IdxImportFormat::kFolder ? "folder" : "webdataset"},
                           {"images", result.images},
                           {"images_in_file", result.images_in_file},
                           {"image_size", {result.rows, result.cols}},
                           {"classes", classes},
                           {"class_names_file", result.labels_file.string()}};
  if (request.names) report["names_file"] = request.names->string();
  if (request.format == IdxImportFormat::kWebDataset) report["shards"] = shards;
  return report;
}

void print_text(const IdxImportRequest& request, const IdxImportResult& result) {
  std::cout << "imported " << result.images << " of " << result.images_in_file << " images (" << result.rows
            << "x" << result.cols << " grey) from " << request.images.string() << "\n";
  if (request.format == IdxImportFormat::kWebDataset) {
    std::cout << "wrote    " << result.shards.size()
              << " webdataset shard(s): " << result.shards.front().string();
    if (result.shards.size() > 1) std::cout << " ... " << result.shards.back().filename().string();
    std::cout << "\n";
  } else {
    std::cout << "wrote    one folder per class in " << request.out.string() << "\n";
  }
  std::cout << "classes  " << result.class_names.size() << " in " << result.labels_file.string()
            << (request.names ? "" : " (no --names: named by index)") << ", images per class:";
  for (std::size_t index = 0; index < result.class_names.size(); ++index) {
    std::cout << (index == 0 ? " " : ", ") << index;
    if (request.names) std::cout << " " << result.class_names[index];
    std::cout << " (" << result.class_counts[index] << ")";
  }
  std::cout << "\n";
}

// `kiln dataset DATA --check import-idx ...` would ignore what describes a dataset.
void refuse_describe_options(const CLI::App& dataset) {
  refuse_unless(false, dataset,
                {"data", "--images", "--every", "--num-classes", "--check", "--strict", "--json"},
                "to describing a dataset", "import-idx was given");
}

void run_import(ImportOptions& options, const CLI::App& command) {
  refuse_describe_options(*command.get_parent());
  IdxImportRequest& request = options.request;
  request.format = options.format == "folder" ? IdxImportFormat::kFolder : IdxImportFormat::kWebDataset;
  refuse_unless(request.format == IdxImportFormat::kWebDataset, command, {"--shard-size", "--prefix"},
                "to --format webdataset", "--format folder was given");
  if (options.first) request.first = *options.first;
  // The report must not land on an input, nor on the class names file the import writes.
  std::vector<NamedPath> taken = {
      {"--idx-images", request.images}, {"--idx-labels", request.labels}, {"-o", request.out / "labels.txt"}};
  if (request.names) taken.push_back({"--names", *request.names});
  check_json_target(options.json, taken);
  request.progress = true;
  const IdxImportResult result = import_idx(request);
  write_json_report(options.json, report_json(request, result));
  if (!json_to_stdout(options.json)) print_text(request, result);
}

}  // namespace

void add_dataset_import_command(CLI::App& dataset) {
  auto options = std::make_shared<ImportOptions>();
  CLI::App* cmd = dataset.add_subcommand(
      "import-idx",
      "Write an IDX pair (MNIST, Fashion-MNIST; raw or .gz) as webdataset shards or class folders, labelled");
  cmd->footer(
      "Images become grey 8-bit PNGs named by their index in the IDX file (KEY = 000000, 000001, ...).\n"
      "webdataset: OUT/PREFIX-000000.tar, ... with KEY.png and KEY.cls (the label) per sample.\n"
      "folder:     OUT/CLASS/KEY.png, one folder per class.\n"
      "Both write OUT/labels.txt, one 'NAME,INDEX' line per class (in the folder layout it maps the "
      "folders to their indices); without --names the classes are named by their index.\n"
      "Example: kiln dataset import-idx --idx-images t10k-images-idx3-ubyte.gz --idx-labels "
      "t10k-labels-idx1-ubyte.gz "
      "--names classes.txt -o fashion-test");
  IdxImportRequest& request = options->request;
  // --images is a count everywhere else (calibration images, a sample), so the IDX files have names of
  // their own; the old names still work and warn.
  CLI::Option* images =
      cmd->add_option("--idx-images", request.images,
                      "IDX images file: uint8 [N, rows, cols] (magic 0x00000803), raw or gzip "
                      "(old name: --images)")
          ->required()
          ->type_name("FILE");
  add_warning_alias(*cmd, images, "--images");
  CLI::Option* labels =
      cmd->add_option("--idx-labels", request.labels,
                      "IDX labels file: uint8 [N] (magic 0x00000801), raw or gzip (old name: --labels)")
          ->required()
          ->type_name("FILE");
  add_warning_alias(*cmd, labels, "--labels");
  cmd->add_option("--names", request.names,
                  "Class names: a labels file with one 'NAME,INDEX' (or 'NAME INDEX') line per class from 0")
      ->type_name("FILE");
  cmd->add_option("--first", options->first, "Import only the first N images")
      ->check(whole_between(1, kMaxCount));
  CLI::Option* output =
      cmd->add_option("-o,--output", request.out,
                      "Output folder (made if missing; one holding files needs --force; old name: --out)")
          ->required()
          ->type_name("OUT");
  add_warning_alias(*cmd, output, "--out");
  cmd->add_option("--format", options->format, "webdataset (tar shards) or folder (one folder per class)")
      ->check(CLI::IsMember({"webdataset", "folder"}))
      ->capture_default_str();
  cmd->add_option("--shard-size", request.shard_size, "Images per webdataset shard")
      ->check(whole_between(1, kMaxCount))
      ->type_name("N")
      ->capture_default_str();
  cmd->add_option("--prefix", request.prefix, "Shard file names: PREFIX-000000.tar, ...")
      ->capture_default_str();
  cmd->add_flag(
      "--force", request.force,
      "Write into a non-empty OUT: files of the same names are replaced, none deleted; a file there "
      "that the new dataset's readers would pick up is refused");
  add_json_file_option(*cmd, options->json, "what was written");
  cmd->callback([options, cmd] { run_import(*options, *cmd); });
}

}  // namespace kiln::cli
