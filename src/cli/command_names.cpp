#include "cli/command_names.h"

#include <algorithm>
#include <numeric>

namespace kiln::cli {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus transposition of adjacent letters ("biuld").
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> nearest_name(std::string_view word, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& name : names) {
    const std::size_t distance = edit_distance(word, name);
    if (!best || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  // Two edits catch the usual slips; the half-word limit keeps "ls" from suggesting "run".
  if (!best || best_distance > 2 || 2 * best_distance >= word.size()) return std::nullopt;
  return best;
}

std::optional<std::string> unknown_command_message(const CLI::App& app, int argc, const char* const* argv) {
  // The program has no option that takes a value before the subcommand (only --help and --version).
  const char* const* first =
      std::find_if(argv + 1, argv + argc, [](const char* argument) { return argument[0] != '-'; });
  if (first == argv + argc) return std::nullopt;
  const std::string word = *first;
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; }))
    names.push_back(command->get_name());
  if (names.empty() || std::find(names.begin(), names.end(), word) != names.end()) return std::nullopt;
  if (const auto near = nearest_name(word, names))
    return "unknown command '" + word + "'; did you mean '" + *near + "'?";
  const std::string listed =
      std::accumulate(std::next(names.begin()), names.end(), names.front(),
                      [](std::string all, const std::string& name) { return std::move(all) + ", " + name; });
  return "unknown command '" + word + "'; the commands are " + listed;
}

}  // namespace kiln::cli
