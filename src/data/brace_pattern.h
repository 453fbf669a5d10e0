// Shard lists written as brace patterns, as webdataset users write them:
// "shard-{000000..000146}.tar" is 147 names counting up, zero-padded as written;
// "{train,val}-{0..3}.tar" expands each group in turn (left group slowest), giving 8 names.
#pragma once

#include <string>
#include <vector>

namespace kiln {

// True when `text` holds a '{' (a brace pattern rather than a path).
bool is_brace_pattern(const std::string& text);

// The names the pattern stands for, in order. Fails on an unclosed or nested brace, a range whose
// ends are not non-negative integers, a descending range, or more than a million names.
std::vector<std::string> expand_braces(const std::string& pattern);

}  // namespace kiln
