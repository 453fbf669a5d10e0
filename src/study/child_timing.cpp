#include "study/child_timing.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"
#include "io/user_json.h"

extern char** environ;

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string seconds_text(double seconds) {
  std::ostringstream text;
  text.precision(6);
  text << seconds << "s";
  return text.str();
}

std::vector<std::string> bench_arguments(const ChildTiming& child, const fs::path& plan_file,
                                         std::int64_t batch, const fs::path& input_npy,
                                         const BenchSettings& settings, bool end_to_end,
                                         const fs::path& json) {
  std::vector<std::string> args = {child.program.string(),
                                   "bench",
                                   plan_file.string(),
                                   "--backend",
                                   child.backend,
                                   "--batch",
                                   std::to_string(batch),
                                   "--input",
                                   input_npy.string(),
                                   "--warmup",
                                   seconds_text(settings.warmup_seconds),
                                   "--duration",
                                   seconds_text(settings.duration_seconds),
                                   "--min-iterations",
                                   std::to_string(settings.min_iterations),
                                   "--json",
                                   json.string()};
  if (end_to_end) args.emplace_back("--end-to-end");
  if (child.strict_backend) args.emplace_back("--strict-backend");
  if (!child.tactic_cache.empty()) {
    args.emplace_back("--tactic-cache");
    args.push_back(child.tactic_cache);
  }
  return args;
}

// Runs args[0] with args, its output into `log`; its exit status (128 + signal if killed).
int run_program(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  require(spawned == 0, "study: cannot start ", args[0], " to time a plan (error ", spawned, ")");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    require(errno == EINTR, "study: waiting for ", args[0], " failed (errno ", errno, ")");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

}  // namespace

namespace {

LatencyStats stats_from_json(const nlohmann::json& latency) {
  LatencyStats stats;
  stats.iterations = latency.at("iterations").get<int>();
  stats.median_ms = latency.at("median_ms").get<double>();
  stats.mean_ms = latency.at("mean_ms").get<double>();
  stats.min_ms = latency.at("min_ms").get<double>();
  stats.max_ms = latency.at("max_ms").get<double>();
  stats.p90_ms = latency.at("p90_ms").get<double>();
  stats.p99_ms = latency.at("p99_ms").get<double>();
  stats.stddev_ms = latency.at("stddev_ms").get<double>();
  stats.runs = latency.at("runs").get<std::int64_t>();
  stats.wall_seconds = latency.at("wall_seconds").get<double>();
  stats.images_per_second = latency.at("images_per_second").get<double>();
  return stats;
}

}  // namespace

ChildTimes time_in_child(const ChildTiming& child, const fs::path& plan_file, std::int64_t batch,
                         const fs::path& input_npy, const BenchSettings& settings, bool end_to_end) {
  const fs::path json = child.scratch->path() / "bench.json", log = child.scratch->path() / "bench.log";
  fs::remove(json);
  const int status =
      run_program(bench_arguments(child, plan_file, batch, input_npy, settings, end_to_end, json), log);
  require(status == 0 && fs::exists(json), "study: timing ", plan_file.string(),
          " in `kiln bench` failed (exit ", status, "): ", last_line(log));
  const nlohmann::json report =
      parse_user_json(read_regular_file(json, kMaxReportJsonBytes, "a kiln bench report"), json.string());
  ChildTimes times;
  times.latency = stats_from_json(report.at("latency"));
  if (end_to_end) times.end_to_end = stats_from_json(report.at("end_to_end"));
  return times;
}

ScratchFolder::ScratchFolder(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  require(mkdtemp(pattern.data()) != nullptr, "cannot make a temporary folder in ",
          fs::temp_directory_path().string());
  path_ = pattern;
}

ScratchFolder::~ScratchFolder() {
  std::error_code ignored;  // a destructor must not throw; a folder left in /tmp is harmless
  fs::remove_all(path_, ignored);
}

}  // namespace kiln
