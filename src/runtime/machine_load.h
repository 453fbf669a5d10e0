// Whether timings were taken on a machine busy with other work. On a loaded machine a network's latency
// measures the scheduler, not the network (a 0.6 ms network timed 1.4 s rounds beside two busy
// processes on two cores), so `kiln bench` and `kiln study` say so, and a study draws no speed
// conclusion from such timings.
//
// Two signs, either enough: other work demanded every core (the 1-minute load average above the
// hardware threads, or more tasks ready to run besides this process's own threads than there are
// hardware threads, sampled around the timing), or the timing's rounds disagree (the spread of the
// round medians is several times their median). Rounds far from the median are named as outliers.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct LoadSample {
  double load_average = -1.0;  // /proc/loadavg's 1-minute figure; negative where unreadable
  int runnable_others = -1;    // tasks ready to run besides this process's threads; negative: unknown
};

// Reads /proc/loadavg and this process's threads now.
LoadSample sample_load();

struct TimingCheck {
  std::vector<std::string> warnings;  // why the timings cannot be trusted; empty when they can
  std::vector<std::string> outliers;  // rounds far from the median, named ("round 3: 12.4 ms, 9.8x ...")
  bool loaded() const { return !warnings.empty(); }
};

// A round spread more than this many times the median of the round medians is a disturbed timing.
inline constexpr double kMaxRoundSpread = 2.0;
// A round whose median is this many times the median of rounds (or that fraction of it) is an outlier.
inline constexpr double kOutlierFactor = 3.0;

// Judges the samples taken around a timing (the first before it: the only one whose load average
// counts) and its round medians (one per round, at least three for
// the spread to count). `what` names the timing in the messages ("fp16", "the timed runs").
TimingCheck check_timing(const std::vector<LoadSample>& samples, int hardware_threads,
                         const std::vector<double>& round_medians_ms, const std::string& what);

// Adds `more`'s warnings and outliers to `check`, skipping repeated lines.
void merge_timing_checks(TimingCheck& check, const TimingCheck& more);

// The medians of `rounds` consecutive runs of equal length cut from `samples_ms` (fewer when there are
// fewer than two samples a round), as `kiln bench` makes rounds of one timed stretch.
std::vector<double> round_medians(const std::vector<double>& samples_ms, int rounds);

// The hardware threads of this machine (what the load average compares with).
int hardware_threads();

}  // namespace kiln
