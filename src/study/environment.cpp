#include "study/environment.h"

#include "kiln_git_commit.h"  // generated at build time (cmake/KilnGitCommit.cmake)

#include <sys/utsname.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

namespace kiln {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

nlohmann::json Environment::to_json() const {
  return {{"date_utc", date_utc},       {"host_cpu", host_cpu},
          {"cpu_threads", cpu_threads}, {"os", os},
          {"compiler", compiler},       {"kiln_version", kiln_version},
          {"kiln_commit", kiln_commit}, {"load_average", load_average}};
}

Environment capture_environment() {
  Environment env;
  env.date_utc = utc_now();
  env.host_cpu = cpu_model();
  env.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  utsname name{};
  if (uname(&name) == 0) env.os = std::string(name.sysname) + " " + name.release + " " + name.machine;
#if defined(__clang__)
  env.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  env.compiler = "g++ " __VERSION__;
#endif
  env.kiln_version = KILN_VERSION;
  env.kiln_commit = KILN_GIT_COMMIT;
  env.load_average = load_average();
  return env;
}

}  // namespace kiln
