// Each subcommand lives in its own file and adds itself to the app here; main.cpp lists them.
#pragma once

#include <CLI/CLI.hpp>

namespace kiln::cli {

// --help of --strict-backend, on every command that takes --backend.
inline constexpr const char* kStrictBackendHelp =
    "Fail if the backend does not support a layer, instead of running that layer on the CPU fallback "
    "(default: run it there, with a warning)";

void add_run_command(CLI::App& app);
void add_build_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_preprocess_command(CLI::App& app);
void add_validate_command(CLI::App& app);
void add_dataset_command(CLI::App& app);
// `kiln dataset import-idx`, a subcommand of `kiln dataset` (cmd_dataset_import.cpp).
void add_dataset_import_command(CLI::App& dataset);
void add_eval_command(CLI::App& app);
void add_study_command(CLI::App& app);

// Completes `kiln build --cuda-option`'s help with the cuda backend's options, loading its plugin: called
// only when help is printed, so that other commands do not load the CUDA libraries (cmd_build.cpp).
void describe_backend_options(CLI::App& app);

}  // namespace kiln::cli
