// Naming a subcommand the program does not have. CLI11 alone reads `kiln buidl` as a stray argument and
// says "A subcommand is required"; a user who mistyped deserves the word they typed and the nearest
// command.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cli {

// Edits (insertions, deletions, substitutions, swaps of neighbours) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The name in `names` nearest to `word`, when close enough to be what was meant (at most 2 edits, and
// fewer than half the word); nullopt otherwise.
std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names);

// "unknown command 'buidl'; did you mean 'build'?" (or "...; the commands are build, run, ...") when the
// first argument that is no option names none of `app`'s subcommands; nullopt when it names one or is
// absent.
std::optional<std::string> unknown_command_message(const CLI::App& app, int argc, const char* const* argv);

}  // namespace kiln::cli
