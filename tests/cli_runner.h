// Runs the kiln binary as a user would, capturing its exit status and its combined output.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace kiln::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

inline CliResult run_kiln(const std::string& arguments) {
  const std::string command = std::string(KILN_BINARY) + " " + arguments + " 2>&1";
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr) result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace kiln::testing
