// A progress line for long loops: "calibrate 120/500 (24%) 3.1 s, eta 9.8 s". On a terminal the line
// is redrawn in place a few times a second; elsewhere (logs, pipes) it is written as a plain line every
// few seconds and once at the end, so a log shows a long loop alive without a line per item.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <string>

namespace kiln {

// True when stderr is a terminal.
bool stderr_is_terminal();

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kLogInterval = std::chrono::seconds(5);

  // `interactive` redraws the line in place as work advances, otherwise each update is a line of its own;
  // `min_interval` limits how often either is written (the final line is always written).
  Progress(std::string label, std::size_t total, std::ostream& out, bool interactive,
           Clock::duration min_interval = std::chrono::milliseconds(250));
  // Writes to stderr: interactive when stderr is a terminal, otherwise a line every kLogInterval.
  Progress(std::string label, std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Counts `steps` more items done (done() never exceeds total()).
  void advance(std::size_t steps = 1);
  // Blanks a line drawn on the terminal so that other output can be written; the next advance()
  // draws it again.
  void clear();
  // Writes the final line once; later calls do nothing.
  void finish();

  std::size_t done() const { return done_; }
  std::size_t total() const { return total_; }
  // "calibrate 120/500 (24%) 3.1 s, eta 9.8 s" for the current state, without a line end.
  std::string line() const;

 private:
  void draw(const std::string& text);

  std::string label_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::ostream& out_;
  bool interactive_;
  Clock::duration min_interval_;
  Clock::time_point start_;
  Clock::time_point last_draw_;
  std::size_t drawn_width_ = 0;
  bool finished_ = false;
};

}  // namespace kiln
