#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace kiln {

bool stderr_is_terminal() { return isatty(fileno(stderr)) != 0; }

Progress::Progress(std::string label, std::size_t total, std::ostream& out, bool interactive,
                   Clock::duration min_interval)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      interactive_(interactive),
      min_interval_(min_interval),
      start_(Clock::now()),
      last_draw_(start_) {}

Progress::Progress(std::string label, std::size_t total)
    : Progress(std::move(label), total, std::cerr, stderr_is_terminal(),
               stderr_is_terminal() ? Clock::duration(std::chrono::milliseconds(250)) : kLogInterval) {}

Progress::~Progress() {
  // A loop left by an exception must not leave the terminal's cursor at the end of a progress line.
  if (interactive_ && drawn_width_ > 0 && !finished_) out_ << "\n" << std::flush;
}

void Progress::advance(std::size_t steps) {
  done_ = std::min(total_, done_ + steps);
  if (finished_) return;
  const bool last = done_ == total_;
  if (last && !interactive_) return;  // finish() writes a log's last line
  const Clock::time_point now = Clock::now();
  if (now - last_draw_ < min_interval_ && !last) return;
  last_draw_ = now;
  draw(line());
}

void Progress::clear() {
  if (!interactive_ || drawn_width_ == 0 || finished_) return;
  out_ << "\r" << std::string(drawn_width_, ' ') << "\r" << std::flush;
  drawn_width_ = 0;
  last_draw_ = Clock::time_point{};  // redraw at the next advance
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  draw(line());
  if (interactive_) out_ << "\n" << std::flush;
}

std::string Progress::line() const {
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  // Rounded down, so 100% means done.
  const std::size_t percent = total_ == 0 ? 100 : done_ * 100 / total_;
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << label_ << " " << done_ << "/" << total_ << " (" << percent
       << "%) " << elapsed << " s";
  if (done_ > 0 && done_ < total_) {
    const double eta = elapsed * static_cast<double>(total_ - done_) / static_cast<double>(done_);
    text << ", eta " << eta << " s";
  }
  return text.str();
}

void Progress::draw(const std::string& text) {
  if (interactive_) {
    // Return to the line start and blank what a longer previous line left behind.
    out_ << "\r" << text << std::string(drawn_width_ > text.size() ? drawn_width_ - text.size() : 0, ' ');
    drawn_width_ = text.size();
  } else {
    out_ << text << "\n";
  }
  out_ << std::flush;
}

}  // namespace kiln
