// Runs the kiln binary as a user would, capturing its exit status and its combined output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace kiln::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line (for one that wraps kiln, e.g. under a ulimit), output as run_kiln's.
inline CliResult run_shell(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  while (fgets(buffer.data(), static_cast<int>(buffer.size()), pipe) != nullptr)
    result.output += buffer.data();
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

inline CliResult run_kiln(const std::string& arguments) {
  return run_shell(std::string(KILN_BINARY) + " " + arguments);
}

}  // namespace kiln::testing
