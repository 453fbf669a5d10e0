// kiln: build, run, benchmark and study engines for vision models.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <kiln/kiln.hpp>
#include <new>
#include <string>

#include "backends/backend.h"
#include "cli/command_names.h"
#include "cli/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "io/temp_files.h"
#include "io/user_json.h"
#include "runtime/backend_plugin.h"

namespace {

// The documented exit statuses (see the footer of `kiln --help`).
constexpr int kFailure = 1;
constexpr int kUsageError = 2;

// Every error is one line, whatever a library put in its message.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// `kiln --version`: what a bug report needs first, with a line per plugin backend saying whether it loads
// here and what it would run on.
std::string version_text() {
  std::string backends;
  for (const std::string_view name : kiln::backend_names())
    backends += kiln::cat(backends.empty() ? "" : ", ", name);
  std::string text = kiln::cat("kiln ", kiln::kiln_version(), " (commit ", kiln::kiln_commit(),
                               ")\nbackends: ", backends);
  for (const std::string_view plugin : kiln::plugin_backend_names())
    text += kiln::cat("\n", plugin, ": ", kiln::plugin_status(plugin));
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  kiln::remove_temp_files_on_interrupt();  // Ctrl-C leaves no half-written temp file behind
  CLI::App app{"kiln " KILN_VERSION
               ": engine builder, runtime and quantization study tool for vision models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text,
                       "Print kiln's version, commit and backends (whether the cuda plugin loads here), and exit");
  app.footer(
      "Run `kiln SUBCOMMAND --help` for a subcommand's options.\n"
      "Exit status: 0 on success, 2 for a usage error (an unknown command, an unknown, missing or malformed "
      "option, or options that contradict each other), 1 for any "
      "other error; every error is one line on stderr starting `kiln: error:`.");
  kiln::cli::add_build_command(app);
  kiln::cli::add_run_command(app);
  kiln::cli::add_bench_command(app);
  kiln::cli::add_inspect_command(app);
  kiln::cli::add_preprocess_command(app);
  kiln::cli::add_validate_command(app);
  kiln::cli::add_dataset_command(app);
  kiln::cli::add_eval_command(app);
  kiln::cli::add_study_command(app);
  if (const auto unknown = kiln::cli::unknown_command_message(app, argc, argv)) {
    std::cerr << "kiln: error: " << *unknown << " (see `kiln --help`)\n";
    return kUsageError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& error) {
    return error.get_exit_code();  // a check that found problems and has reported them (dataset, validate)
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) {  // --help and --version
      kiln::cli::describe_backend_options(app);
      return app.exit(error);
    }
    std::cerr << "kiln: error: " << error.what() << " (see `kiln --help`)\n";
    return kUsageError;
  } catch (const kiln::Error& error) {
    std::cerr << "kiln: error: " << error.what() << "\n";
    return kFailure;
  } catch (const kiln::sdk::Error& error) {  // libkiln.so's message is already the one line to print
    std::cerr << "kiln: error: " << error.what() << "\n";
    return kFailure;
  } catch (const std::bad_alloc&) {
    std::cerr << "kiln: error: out of memory: use a smaller --batch (or fewer --input images), or a machine "
                 "with more memory\n";
    return kFailure;
  } catch (const nlohmann::json::exception& error) {
    // Readers turn bad JSON into kiln::Error and writers write any text; one escaping is kiln's fault,
    // never a backend's, so it gets no hint about --batch.
    std::cerr << "kiln: error: unexpected JSON: " << kiln::json_error_text(error) << "\n";
    return kFailure;
  } catch (const std::filesystem::filesystem_error& error) {
    std::cerr << "kiln: error: " << one_line(error.what()) << ": check the path and its permissions\n";
    return kFailure;
  } catch (const std::exception& error) {
    // A library below kiln (oneDNN, CUDA, cuDNN) failed without a kiln::Error: say what to change.
    std::cerr << "kiln: error: " << one_line(error.what())
              << " (a backend library failed: try a smaller --batch, or another --backend)\n";
    return kFailure;
  }
  return 0;
}
