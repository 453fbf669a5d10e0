// kiln: build, run, benchmark and study engines for vision models.
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"kiln " KILN_VERSION
               ": engine builder, runtime and quantization study tool for vision models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kiln " KILN_VERSION);
  app.footer("Run `kiln SUBCOMMAND --help` for a subcommand's options.");
  kiln::cli::add_build_command(app);
  kiln::cli::add_run_command(app);
  kiln::cli::add_bench_command(app);
  kiln::cli::add_inspect_command(app);
  kiln::cli::add_preprocess_command(app);
  kiln::cli::add_validate_command(app);
  kiln::cli::add_dataset_command(app);
  kiln::cli::add_eval_command(app);
  kiln::cli::add_study_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const kiln::Error& error) {
    std::cerr << "kiln: error: " << error.what() << "\n";
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "kiln: internal error: " << error.what() << "\n";
    return 2;
  }
  return 0;
}
