// Progress: the line's format, redrawing on a terminal, and one final line elsewhere.
#include "core/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln {
namespace {

TEST(Progress, NonInteractiveWritesNothingBeforeTheIntervalThenTheFinalLine) {
  std::ostringstream out;
  Progress progress("calibrate", 500, out, /*interactive=*/false);
  for (int i = 0; i < 120; ++i) progress.advance();
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(progress.line().rfind("calibrate 120/500 (24%) ", 0), 0u) << progress.line();
  EXPECT_NE(progress.line().find(" s, eta "), std::string::npos) << progress.line();
  progress.advance(1000);  // clamps at the total
  EXPECT_EQ(progress.done(), 500u);
  progress.finish();
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("calibrate 500/500 (100%) ", 0), 0u) << text;
  EXPECT_EQ(text.find("eta"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST(Progress, NonInteractiveWritesPlainLinesAtTheInterval) {
  std::ostringstream out;
  Progress progress("timing round", 3, out, /*interactive=*/false, std::chrono::seconds(0));
  progress.advance();
  progress.advance();
  progress.advance();  // the last step: left to finish()
  progress.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.rfind("timing round 1/3 (33%) ", 0), 0u) << text;
  EXPECT_NE(text.find("\ntiming round 2/3 (66%) "), std::string::npos) << text;
  EXPECT_NE(text.find("\ntiming round 3/3 (100%) "), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
}

TEST(Progress, InteractiveRedrawsInPlace) {
  std::ostringstream out;
  {
    Progress progress("check", 3, out, /*interactive=*/true, std::chrono::seconds(0));
    progress.advance();
    progress.advance();
    progress.clear();
    out << "skipped x: bad\n";
    progress.advance();
    progress.finish();
  }
  const std::string text = out.str();
  EXPECT_NE(text.find("\rcheck 1/3 (33%)"), std::string::npos) << text;
  EXPECT_NE(text.find("\rcheck 2/3 (66%)"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped x: bad\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\rcheck 3/3 (100%)"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(Progress, ThrottledRedrawsStillShowTheEnd) {
  std::ostringstream out;
  Progress progress("calibrate", 1000, out, /*interactive=*/true, std::chrono::hours(1));
  for (int i = 0; i < 1000; ++i) progress.advance();
  const std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 1) << text;  // only the last step drew
  EXPECT_NE(text.find("1000/1000"), std::string::npos);
}

TEST(Progress, EmptyLoop) {
  std::ostringstream out;
  Progress progress("nothing", 0, out, false);
  progress.finish();
  EXPECT_EQ(out.str().rfind("nothing 0/0 (100%)", 0), 0u) << out.str();
}

}  // namespace
}  // namespace kiln
