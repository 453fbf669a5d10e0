#include "runtime/machine_load.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include "core/error.h"

namespace kiln {

namespace {

std::string fixed(double value, int digits) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(digits) << value;
  return text.str();
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// This process's threads that are running or ready to run now (state R in their stat files).
int own_runnable_threads() {
  int runnable = 0;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    std::ifstream in(task.path() / "stat");
    std::string line;
    if (!std::getline(in, line)) continue;
    const auto close = line.rfind(')');  // the name in parentheses may hold spaces
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'R') ++runnable;
  }
  return runnable;
}

// "the 1-minute load average 4.1 is above the 2 hardware threads"
std::string load_warning(const std::vector<LoadSample>& samples, int threads) {
  // The load average follows this process's own work with a minute's lag, so only the first sample's,
  // taken before the timing, says what other work there was.
  const double highest = samples.empty() ? -1.0 : samples.front().load_average;
  double others = 0.0;
  int counted = 0;
  for (const LoadSample& s : samples) {
    if (s.runnable_others >= 0) {
      others += s.runnable_others;
      ++counted;
    }
  }
  if (threads <= 0) return "";
  if (highest > threads) {
    return cat("the machine was loaded: its 1-minute load average was ", fixed(highest, 2), ", above its ",
               threads, " hardware threads");
  }
  if (counted > 0 && others / counted >= threads) {
    return cat("the machine was loaded: other work kept ", fixed(others / counted, 1),
               " tasks ready to run on its ", threads, " hardware threads while it timed");
  }
  return "";
}

}  // namespace

LoadSample sample_load() {
  LoadSample sample;
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen, running;
  if (!(in >> one >> five >> fifteen >> running)) return sample;
  sample.load_average = std::atof(one.c_str());
  // "R/T": R counts every runnable task, this process's own threads included.
  const int runnable = std::atoi(running.c_str());
  sample.runnable_others = std::max(0, runnable - own_runnable_threads());
  return sample;
}

int hardware_threads() { return static_cast<int>(std::thread::hardware_concurrency()); }

std::vector<double> round_medians(const std::vector<double>& samples_ms, int rounds) {
  std::vector<double> medians;
  if (rounds <= 0 || samples_ms.empty()) return medians;
  const std::size_t count = std::min<std::size_t>(static_cast<std::size_t>(rounds), samples_ms.size() / 2);
  if (count == 0) return {median_of(samples_ms)};
  const std::size_t length = samples_ms.size() / count;
  for (std::size_t r = 0; r < count; ++r) {
    const auto begin = samples_ms.begin() + static_cast<std::ptrdiff_t>(r * length);
    const auto end = r + 1 == count ? samples_ms.end() : begin + static_cast<std::ptrdiff_t>(length);
    medians.push_back(median_of(std::vector<double>(begin, end)));
  }
  return medians;
}

TimingCheck check_timing(const std::vector<LoadSample>& samples, int threads,
                         const std::vector<double>& round_medians_ms, const std::string& what) {
  TimingCheck check;
  if (const std::string warning = load_warning(samples, threads); !warning.empty())
    check.warnings.push_back(warning);
  if (round_medians_ms.size() < 3) return check;
  const double median = median_of(round_medians_ms);
  if (median <= 0) return check;
  const auto [low, high] = std::minmax_element(round_medians_ms.begin(), round_medians_ms.end());
  if (*high - *low > kMaxRoundSpread * median) {
    check.warnings.push_back(cat("the round medians of ", what, " spread from ", fixed(*low, 3), " to ",
                                 fixed(*high, 3), " ms, more than ", fixed(kMaxRoundSpread, 0),
                                 "x their median ", fixed(median, 3),
                                 " ms: other work disturbed the timing"));
  }
  for (std::size_t i = 0; i < round_medians_ms.size(); ++i) {
    const double ratio = round_medians_ms[i] / median;
    if (ratio >= kOutlierFactor || ratio <= 1.0 / kOutlierFactor) {
      check.outliers.push_back(cat(what, ", round ", i + 1, ": ", fixed(round_medians_ms[i], 3), " ms, ",
                                   fixed(ratio, 1), "x the median ", fixed(median, 3), " ms"));
    }
  }
  return check;
}

void merge_timing_checks(TimingCheck& check, const TimingCheck& more) {
  const auto add = [](std::vector<std::string>& to, const std::vector<std::string>& from) {
    for (const std::string& line : from) {
      if (std::find(to.begin(), to.end(), line) == to.end()) to.push_back(line);
    }
  };
  add(check.warnings, more.warnings);
  add(check.outliers, more.outliers);
}

}  // namespace kiln
