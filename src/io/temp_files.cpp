#include "io/temp_files.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace kiln {

namespace {

// The handler may only touch memory that needs no allocation or lock: a fixed table of path buffers,
// each claimed through an atomic state (free -> claimed while its path is copied -> registered).
constexpr int kSlots = 64;
constexpr std::size_t kMaxPath = 4096;
enum SlotState : int { kFree = 0, kClaimed = 1, kRegistered = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  std::array<char, kMaxPath> path{};
};

std::array<Slot, kSlots>& slots() {
  static std::array<Slot, kSlots> table;
  return table;
}

void remove_registered_and_reraise(int signal_number) {
  for (Slot& slot : slots()) {
    if (slot.state.load(std::memory_order_acquire) == kRegistered) ::unlink(slot.path.data());
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

}  // namespace

TempFileGuard::TempFileGuard(const std::filesystem::path& path) {
  const std::string& text = path.native();
  if (text.size() >= kMaxPath) return;
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = slots()[static_cast<std::size_t>(i)];
    int expected = kFree;
    if (!slot.state.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) continue;
    std::memcpy(slot.path.data(), text.c_str(), text.size() + 1);
    slot.state.store(kRegistered, std::memory_order_release);
    slot_ = i;
    return;
  }
}

TempFileGuard::~TempFileGuard() {
  if (slot_ >= 0) slots()[static_cast<std::size_t>(slot_)].state.store(kFree, std::memory_order_release);
}

void remove_temp_files_on_interrupt() {
  slots();  // made before any signal can arrive, so the handler never constructs it
  struct sigaction action {};
  action.sa_handler = remove_registered_and_reraise;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  for (const int signal_number : {SIGINT, SIGTERM}) {
    // A signal the parent ignored (a background job's SIGINT, nohup) stays ignored.
    struct sigaction previous {};
    if (::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    ::sigaction(signal_number, &action, nullptr);
  }
}

}  // namespace kiln
