// Option checks every subcommand shares: human bounds on numbers (printed as the user wrote them),
// options that another option makes meaningless (an error naming both, never silently ignored), and
// old spellings kept as aliases that warn once.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace kiln::cli {

// The largest batch a plan, bench or eval run takes: far above what fits a GPU at 224x224, low enough
// that a typo (an extra zero) is caught before any memory is asked for.
inline constexpr std::int64_t kMaxBatch = 4096;
// The most CPU threads, runs, images and strides the options take.
inline constexpr std::int64_t kMaxThreads = 1024;
inline constexpr std::int64_t kMaxCount = 1'000'000'000;

// A whole number in [low, high]: "must be between LOW and HIGH, got TEXT" (CLI11 prefixes the option).
CLI::Validator whole_between(std::int64_t low, std::int64_t high);
// A real number in [low, high], the bounds written as the help shows them ("0 and 1").
CLI::Validator real_between(double low, double high);

// One of `names`, as given: "expected fp32, fp16 or fp8, got 'int8'" (CLI11 prefixes the option), so a
// misspelt choice is a usage error before any work.
CLI::Validator one_of(std::vector<std::string> names);
// A backend kiln has: "expected cpu, cpu-reference or cuda, got 'gpu'". One this binary was built without
// (cuda without the toolkit) passes here and is refused when made, with the reason.
CLI::Validator known_backend();

// "a, b or c", for messages.
std::string alternatives_text(const std::vector<std::string>& names);

// --cuda-option's NAME=VALUE list resolved by `backend` (Backend::resolve_options: every option, for the
// plan to record); a bad name or value is a usage error naming the option and the values it takes. An
// unknown backend fails as it always does.
// Whether --cuda-option applies to `backend`: one with options of its own (Backend::takes_options). A
// backend this kiln lacks passes, to fail where it is made, with the reason.
bool backend_takes_options(const std::string& backend);

std::map<std::string, std::string> resolved_cuda_options(const std::vector<std::string>& assignments,
                                                         const std::string& backend);

// A number as a person writes it (0.25, 1, 1e-09), whatever the stream's precision elsewhere.
std::string number_text(double value);

// A usage error (exit status 2): one line, the options named by the caller.
[[noreturn]] void usage_error(const std::string& message);

// The first of `options` the user gave on `command`, or "" (the name as written in --help).
std::string first_given(const CLI::App& command, std::initializer_list<const char*> options);

// When some of `options` were given but `applies` is false: a usage error "OPTION ... but REASON".
// `reason` names the option or setting that makes them meaningless ("--precision fp16 was given").
void refuse_unless(bool applies, const CLI::App& command, std::initializer_list<const char*> options,
                   const std::string& needs, const std::string& reason);

// Adds `old_name` as a hidden alias of `option` (same value), warning once on stderr when it is used.
// `current` is the name --help documents.
void add_warning_alias(CLI::App& command, CLI::Option* option, const std::string& old_name);

}  // namespace kiln::cli
