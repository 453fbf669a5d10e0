// Temp files that a signal must not leave behind. Outputs are written to a hidden temp file and renamed
// into place (atomic_file.h); a Ctrl-C between the two used to leave the temp file, which then made an
// output folder "not empty". Writers register each temp file while it exists, and the program's handler
// for SIGINT and SIGTERM removes the registered ones before the process ends as the signal would have
// ended it. A library never installs signal handlers: the kiln program does (main), and an embedding
// application may call the same function.
#pragma once

#include <filesystem>

namespace kiln {

// Registers `path` until the TempFileGuard is destroyed (after the rename, or the removal on failure).
// Paths longer than the handler can hold, or more than it has slots for, are simply not registered.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::filesystem::path& path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  int slot_ = -1;
};

// Installs handlers for SIGINT and SIGTERM that remove every registered temp file, then end the process
// with the signal's default action (exit status 128 + the signal's number, as before). A signal that
// was ignored when the program started stays ignored.
void remove_temp_files_on_interrupt();

}  // namespace kiln
