#include "study/environment.h"

#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/build_info.h"
#include "core/error.h"

namespace kiln {
namespace {

// The value after "key :" of /proc/cpuinfo's first line starting with `key`; empty when there is none.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
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

// Facts of every backend offered here, then a row for each required one still missing: "not in this build"
// or, for a plugin installed here that does not load, why.
std::vector<BackendFact> backend_facts() {
  std::vector<BackendFact> facts;
  std::string missing = "not in this build of kiln";
  for (const std::string_view name : backend_names()) {
    try {
      for (BackendFact& fact : make_backend(name)->environment()) facts.push_back(std::move(fact));
    } catch (const Error& error) {
      missing = error.what();
    }
  }
  for (const auto& [key, label] : required_backend_facts()) {
    const bool present =
        std::any_of(facts.begin(), facts.end(), [&](const BackendFact& f) { return f.key == key; });
    if (!present) facts.push_back({key, label, missing});
  }
  return facts;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& required_backend_facts() {
  static const std::vector<std::pair<std::string, std::string>> kRequired = {
      {"gpu", "GPU"},     {"gpu_driver", "GPU driver"}, {"cuda_runtime", "CUDA runtime"},
      {"cudnn", "cuDNN"}, {"cublaslt", "cuBLASLt"},     {"onednn", "oneDNN"}};
  return kRequired;
}

std::string cpu_isa_from_flags(const std::string& flags) {
  std::istringstream words(flags);
  std::vector<std::string> present;
  for (std::string word; words >> word;) present.push_back(word);
  if (present.empty()) return "unknown (no flags in /proc/cpuinfo)";
  const auto has = [&](const char* flag) {
    return std::find(present.begin(), present.end(), flag) != present.end();
  };
  std::string amx_kinds;  // AMX's tile instructions come in data types
  for (const char* kind : {"amx_bf16", "amx_int8", "amx_fp16"}) {
    if (has(kind)) amx_kinds += cat(amx_kinds.empty() ? "" : ", ", std::string(kind).substr(4));
  }
  // The dot-product and narrow-float extensions are what int8 and bf16 plans run fast on.
  const std::vector<std::pair<std::string, bool>> extensions = {
      {"AVX2", has("avx2")},
      {"AVX-VNNI", has("avx_vnni")},
      {"AVX-512", has("avx512f")},
      {"AVX512-VNNI", has("avx512_vnni")},
      {"AVX512-BF16", has("avx512_bf16")},
      {"AVX512-FP16", has("avx512_fp16")},
      {amx_kinds.empty() ? "AMX" : "AMX (" + amx_kinds + ")", has("amx_tile")}};
  std::string yes, no;
  for (const auto& [name, available] : extensions) {
    std::string& list = available ? yes : no;
    list += (list.empty() ? "" : ", ") + name;
  }
  if (yes.empty()) return "none of " + no;
  return no.empty() ? yes : yes + "; no " + no;
}

bool Environment::overloaded() const {
  return cpu_threads > 0 && std::atof(load_average.c_str()) > cpu_threads;
}

nlohmann::json Environment::to_json() const {
  nlohmann::json json = {{"date_utc", date_utc},
                         {"host_cpu", host_cpu},
                         {"cpu_isa", cpu_isa},
                         {"cpu_threads", cpu_threads},
                         {"os", os},
                         {"compiler", compiler},
                         {"kiln_version", kiln_version},
                         {"kiln_commit", kiln_commit},
                         {"load_average", load_average},
                         {"load_above_hardware_threads", overloaded()}};
  for (const BackendFact& fact : backend_facts) json[fact.key] = fact.value;
  if (!backend_options.empty()) json["backend_options"] = backend_options;
  return json;
}

Environment capture_environment() {
  Environment env;
  env.date_utc = utc_now();
  env.host_cpu = cpuinfo_field("model name");
  if (env.host_cpu.empty()) env.host_cpu = "unknown";
  env.cpu_isa = cpu_isa_from_flags(cpuinfo_field("flags"));
  env.cpu_threads = static_cast<int>(std::thread::hardware_concurrency());
  utsname name{};
  if (uname(&name) == 0) env.os = std::string(name.sysname) + " " + name.release + " " + name.machine;
#if defined(__clang__)
  env.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  env.compiler = "g++ " __VERSION__;
#endif
  env.kiln_version = std::string(kiln_version());
  env.kiln_commit = std::string(kiln_commit());
  env.load_average = load_average();
  env.backend_facts = backend_facts();
  return env;
}

}  // namespace kiln
